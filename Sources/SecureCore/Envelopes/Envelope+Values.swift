import Crypto
import Foundation

/// Sealing structured values (the seed's `EncryptPlistObject`): the value is serialized, then sealed
/// as an ordinary envelope, so every envelope guarantee applies.
extension Envelope {
    /// Seals a property-list object (dictionary, array, string, data, date, number, boolean),
    /// serialized as a binary property list.
    /// Throws `SecureCoreError.invalidParameter` (not a property list, or not a 32-byte key).
    public static func seal(propertyList: Any, key: SymmetricKey, context: some DataProtocol = Data()) throws(SecureCoreError) -> Data {
        try seal(try serialize(propertyList: propertyList), key: key, context: context)
    }

    /// Seals a property-list object under a passphrase.
    public static func seal<S: DataProtocol>(
        /// Throws `SecureCoreError.invalidParameter` (not a property list, or KDF parameters the format cannot store).
        propertyList: Any, passphrase: S, kdf: PasswordKDF = .default, context: some DataProtocol = Data()
    ) throws(SecureCoreError) -> Data {
        try seal(try serialize(propertyList: propertyList), passphrase: passphrase, kdf: kdf, context: context)
    }

    /// Opens a sealed property-list object.
    /// Throws as `open(_:key:context:)`, or `malformedEncoding` when the content is not a property list.
    public static func openPropertyList<E: DataProtocol>(_ envelope: E, key: SymmetricKey, context: some DataProtocol = Data()) throws(SecureCoreError) -> Any {
        try deserializePropertyList(try open(envelope, key: key, context: context))
    }

    /// Opens a property-list object sealed under a passphrase.
    /// Throws as `open(_:passphrase:context:limits:)`, or `malformedEncoding` when the content is not a property list.
    public static func openPropertyList<E: DataProtocol, S: DataProtocol>(
        _ envelope: E, passphrase: S, context: some DataProtocol = Data(), limits: KDFLimits = .default
    ) throws(SecureCoreError) -> Any {
        try deserializePropertyList(try open(envelope, passphrase: passphrase, context: context, limits: limits))
    }

    /// Seals a `Codable` value, encoded as a binary property list.
    /// Throws `SecureCoreError.invalidParameter` (the value does not encode, or not a 32-byte key).
    public static func seal<T: Encodable>(encodable value: T, key: SymmetricKey, context: some DataProtocol = Data()) throws(SecureCoreError) -> Data {
        try seal(try encode(value), key: key, context: context)
    }

    /// Opens a sealed `Codable` value of type `type`.
    /// Throws as `open(_:key:context:)`, or `malformedEncoding` when the content is not a `T`.
    public static func open<T: Decodable, E: DataProtocol>(
        _ type: T.Type, from envelope: E, key: SymmetricKey, context: some DataProtocol = Data()
    ) throws(SecureCoreError) -> T {
        try decode(type, from: try open(envelope, key: key, context: context))
    }

    /// Seals a `Codable` value under a passphrase.
    /// Throws `SecureCoreError.invalidParameter` (the value does not encode, or KDF parameters the format cannot store).
    public static func seal<T: Encodable, S: DataProtocol>(
        encodable value: T, passphrase: S, kdf: PasswordKDF = .default, context: some DataProtocol = Data()
    ) throws(SecureCoreError) -> Data {
        try seal(try encode(value), passphrase: passphrase, kdf: kdf, context: context)
    }

    /// Opens a `Codable` value sealed under a passphrase.
    /// Throws as `open(_:passphrase:context:limits:)`, or `malformedEncoding` when the content is not a `T`.
    public static func open<T: Decodable, E: DataProtocol, S: DataProtocol>(
        _ type: T.Type, from envelope: E, passphrase: S, context: some DataProtocol = Data(), limits: KDFLimits = .default
    ) throws(SecureCoreError) -> T {
        try decode(type, from: try open(envelope, passphrase: passphrase, context: context, limits: limits))
    }

    private static func serialize(propertyList: Any) throws(SecureCoreError) -> Data {
        guard PropertyListSerialization.propertyList(propertyList, isValidFor: .binary) else {
            throw SecureCoreError.invalidParameter("value is not a property-list object")
        }
        do {
            return try PropertyListSerialization.data(fromPropertyList: propertyList, format: .binary, options: 0)
        } catch {
            throw SecureCoreError.invalidParameter("value is not a property-list object")
        }
    }

    private static func deserializePropertyList(_ data: Data) throws(SecureCoreError) -> Any {
        do {
            return try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw SecureCoreError.malformedEncoding("sealed content is not a property list")
        }
    }

    private static func encode<T: Encodable>(_ value: T) throws(SecureCoreError) -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        do {
            return try encoder.encode(value)
        } catch {
            throw SecureCoreError.invalidParameter("value cannot be encoded: \(error)")
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(SecureCoreError) -> T {
        do {
            return try PropertyListDecoder().decode(type, from: data)
        } catch {
            throw SecureCoreError.malformedEncoding("sealed content is not a \(T.self)")
        }
    }
}
