@_exported import SecureCore
@_exported import SecureKeys
