import Crypto
import Foundation

/// A hash function SecureCore can compute. The SHA-2 family is the default; SHA-1 and MD5 exist
/// only for compatibility and are reachable only through `HashFunction.Insecure`.
public struct HashFunction: Sendable, Hashable, CustomStringConvertible {
    enum Kind: String, Sendable, Hashable { case sha256, sha384, sha512, sha1, md5 }
    let kind: Kind

    /// SHA-256 (FIPS 180-4).
    public static let sha256 = HashFunction(kind: .sha256)
    /// SHA-384 (FIPS 180-4).
    public static let sha384 = HashFunction(kind: .sha384)
    /// SHA-512 (FIPS 180-4).
    public static let sha512 = HashFunction(kind: .sha512)

    /// Broken hash functions, for reading and verifying legacy data only. Never use them for new
    /// signatures, integrity checks or key derivation.
    public enum Insecure {
        /// SHA-1: collisions are practical; legacy verification only.
        public static let sha1 = HashFunction(kind: .sha1)
        /// MD5: collisions are trivial; legacy checksums only.
        public static let md5 = HashFunction(kind: .md5)
    }

    /// Every secure hash function.
    public static let secure: [HashFunction] = [.sha256, .sha384, .sha512]

    /// `sha256`, `sha384`, `sha512`, `sha1` or `md5`.
    public var name: String { kind.rawValue }
    /// The function's name, as `sf hash` prints it (for example `sha256`).
    public var description: String { name }

    /// True for SHA-1 and MD5.
    public var isInsecure: Bool { kind == .sha1 || kind == .md5 }

    /// The digest length in bytes.
    public var outputByteCount: Int {
        switch kind {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        case .sha1: 20
        case .md5: 16
        }
    }

    /// Looks a function up by `name` (case-insensitive, `-` ignored: `SHA-256` works).
    public init?(name: String) {
        let key = name.lowercased().replacingOccurrences(of: "-", with: "")
        guard let kind = Kind(rawValue: key) else { return nil }
        self.kind = kind
    }

    private init(kind: Kind) { self.kind = kind }
}

/// One-shot and incremental hashing of bytes, streams, files and encodable values.
public enum Hashing {
    /// The digest of `data`.
    public static func hash<D: DataProtocol>(_ data: D, with function: HashFunction = .sha256) -> Data {
        var hasher = IncrementalHasher(function)
        hasher.update(data)
        return hasher.finalize()
    }

    /// The digest of everything readable from `handle`, reading at most `bufferSize` bytes at a time.
    public static func hash(
        reading handle: FileHandle, with function: HashFunction = .sha256, bufferSize: Int = 1 << 20
    ) throws(SecureCoreError) -> Data {
        var hasher = IncrementalHasher(function)
        do {
            while let chunk = try handle.read(upToCount: bufferSize), !chunk.isEmpty {
                hasher.update(chunk)
            }
        } catch {
            throw .io(path: "file descriptor \(handle.fileDescriptor)", reason: "read failed")
        }
        return hasher.finalize()
    }

    /// The digest of the file at `path`, in bounded memory.
    /// Throws `SecureCoreError.io` when the file cannot be opened or read.
    public static func hash(fileAt path: String, with function: HashFunction = .sha256) throws(SecureCoreError) -> Data {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SecureCoreError.io(path: path, reason: "cannot open for reading")
        }
        defer { try? handle.close() }
        return try hash(reading: handle, with: function)
    }

    /// The digest of the canonical encoding of `value`: JSON with sorted keys (see docs/FORMATS.md),
    /// so equal values hash equally whatever the order their dictionaries were built in.
    /// Throws `SecureCoreError.invalidParameter` when the value does not encode.
    public static func hash<T: Encodable>(encodable value: T, with function: HashFunction = .sha256) throws(SecureCoreError) -> Data {
        hash(try CanonicalEncoding.json(value), with: function)
    }

    /// The digest of the canonical encoding of a property-list object (dictionary, array, string,
    /// data, date, number or boolean), independent of dictionary order.
    /// Throws `SecureCoreError.invalidParameter` for a value that is not a property list.
    public static func hash(propertyList: Any, with function: HashFunction = .sha256) throws(SecureCoreError) -> Data {
        hash(try CanonicalEncoding.propertyList(propertyList), with: function)
    }
}

/// Incremental hashing with bounded memory: feed any number of chunks, then `finalize()`.
public struct IncrementalHasher: Sendable {
    private enum State: Sendable {
        case sha256(SHA256), sha384(SHA384), sha512(SHA512), sha1(Crypto.Insecure.SHA1), md5(Crypto.Insecure.MD5)
    }

    private var state: State
    /// The function this hasher computes.
    public let function: HashFunction

    /// A hasher for `function`, with nothing fed yet.
    public init(_ function: HashFunction) {
        self.function = function
        switch function.kind {
        case .sha256: state = .sha256(SHA256())
        case .sha384: state = .sha384(SHA384())
        case .sha512: state = .sha512(SHA512())
        case .sha1: state = .sha1(Crypto.Insecure.SHA1())
        case .md5: state = .md5(Crypto.Insecure.MD5())
        }
    }

    /// Adds `data` to the hash.
    public mutating func update<D: DataProtocol>(_ data: D) {
        switch state {
        case .sha256(var h): h.update(data: data); state = .sha256(h)
        case .sha384(var h): h.update(data: data); state = .sha384(h)
        case .sha512(var h): h.update(data: data); state = .sha512(h)
        case .sha1(var h): h.update(data: data); state = .sha1(h)
        case .md5(var h): h.update(data: data); state = .md5(h)
        }
    }

    /// The digest of everything added so far.
    public func finalize() -> Data {
        switch state {
        case .sha256(let h): Data(h.finalize())
        case .sha384(let h): Data(h.finalize())
        case .sha512(let h): Data(h.finalize())
        case .sha1(let h): Data(h.finalize())
        case .md5(let h): Data(h.finalize())
        }
    }
}

/// HMAC (RFC 2104) over the SHA-2 functions, with constant-time verification.
public enum MessageAuthentication {
    /// HMAC of `data` under `key` with `function` (SHA-256/384/512; SHA-1 allowed for legacy peers).
    public static func hmac<D: DataProtocol, K: ContiguousBytes>(
        _ data: D, key: K, with function: HashFunction = .sha256
    ) -> Data {
        let key = SymmetricKey(data: key)
        switch function.kind {
        case .sha256: return Data(HMAC<SHA256>.authenticationCode(for: data, using: key))
        case .sha384: return Data(HMAC<SHA384>.authenticationCode(for: data, using: key))
        case .sha512: return Data(HMAC<SHA512>.authenticationCode(for: data, using: key))
        case .sha1: return Data(HMAC<Crypto.Insecure.SHA1>.authenticationCode(for: data, using: key))
        case .md5: return Data(HMAC<Crypto.Insecure.MD5>.authenticationCode(for: data, using: key))
        }
    }

    /// True when `mac` is the HMAC of `data` under `key`; compares in constant time.
    public static func isValid<D: DataProtocol, K: ContiguousBytes, M: DataProtocol>(
        _ mac: M, for data: D, key: K, with function: HashFunction = .sha256
    ) -> Bool {
        ConstantTime.equal(Data(mac), hmac(data, key: key, with: function))
    }
}
