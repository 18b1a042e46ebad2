@_exported import SecureCore
@_exported import SecureKeychain
@_exported import SecureVault
@_exported import AgeEncryption
@_exported import SecureKeys
@_exported import SecureKeyStore
@_exported import SecureRecords
@_exported import SecureChannel
