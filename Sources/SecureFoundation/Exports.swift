@_exported import SecureCore
