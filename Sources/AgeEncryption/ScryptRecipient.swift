import Crypto
import Foundation
import SecureCore

extension Age {
    /// The native passphrase recipient: the file key wrapped under scrypt(passphrase). Its stanza
    /// must be the only one in the header.
    public struct ScryptRecipient: Recipient {
        static let stanzaType = "scrypt"
        static let saltLabel = Data("age-encryption.org/v1/scrypt".utf8)
        /// The default work factor (log2 N): 18, as age uses; about a second here.
        public static let defaultWorkFactor = 18

        private let passphrase: SecretBytes
        /// log2 of the scrypt N parameter written into the stanza.
        public let workFactor: Int

        /// A recipient for `passphrase` (UTF-8 bytes) with `workFactor` in 1...40. Throws
        /// `AgeError.invalidRecipient` for another work factor or an empty passphrase.
        public init(passphrase: SecretBytes, workFactor: Int = defaultWorkFactor) throws(AgeError) {
            guard (1...40).contains(workFactor) else {
                throw AgeError.invalidRecipient("scrypt work factor \(workFactor) is outside 1...40")
            }
            guard passphrase.count > 0 else { throw AgeError.invalidRecipient("the passphrase is empty") }
            self.passphrase = passphrase
            self.workFactor = workFactor
        }

        /// A label no other recipient has, so the passphrase stanza is always alone in its header.
        public let labels: Set<String> = ["passphrase-" + Hex.encode(SecureRandom.bytes(count: 16))]

        /// Wraps `fileKey` under scrypt of the passphrase. Throws `AgeError.scrypt` when scrypt cannot
        /// run (for example it cannot allocate its memory).
        public func wrap(fileKey: SecretBytes) throws(AgeError) -> [Stanza] {
            let salt = SecureRandom.bytes(count: 16)
            let wrapKey = try ScryptIdentity.deriveWrapKey(passphrase, salt: salt, workFactor: workFactor)
            let body = try FileKeyWrap.seal(fileKey, with: wrapKey)
            return [Stanza(arguments: [Self.stanzaType, RawBase64.encode(salt), String(workFactor)], body: body)]
        }
    }

    /// The native passphrase identity. Refuses work factors above `workFactorCeiling` before doing
    /// any work, so a crafted file cannot make decryption take hours.
    public struct ScryptIdentity: Identity {
        /// The default ceiling on the work factor accepted from a file: 22 (about 16 s, 4 GiB).
        public static let defaultWorkFactorCeiling = 22

        private let passphrase: @Sendable () throws -> SecretBytes
        /// The largest work factor (log2 N) this identity will compute.
        public let workFactorCeiling: Int

        /// An identity for `passphrase` (UTF-8 bytes) that accepts work factors up to `workFactorCeiling`.
        public init(passphrase: SecretBytes, workFactorCeiling: Int = defaultWorkFactorCeiling) {
            self.init(workFactorCeiling: workFactorCeiling) { passphrase }
        }

        /// An identity that asks `passphrase` for the passphrase only once a well-formed scrypt
        /// stanza within the ceiling was found (so a prompt is not wasted on a file it would refuse).
        public init(workFactorCeiling: Int = defaultWorkFactorCeiling, passphrase: @escaping @Sendable () throws -> SecretBytes) {
            self.passphrase = passphrase
            self.workFactorCeiling = min(workFactorCeiling, 40)
        }

        /// The file key from the header's scrypt stanza; nil when there is none or the passphrase
        /// does not open it. Throws `AgeError.malformedHeader`, `workFactorAboveCeiling` (before any
        /// work), or `passphraseUnavailable` when the passphrase closure fails.
        public func unwrap(stanzas: [Stanza]) throws(AgeError) -> SecretBytes? {
            for stanza in stanzas where stanza.type == ScryptRecipient.stanzaType {
                guard stanzas.count == 1 else {
                    throw AgeError.malformedHeader("an scrypt stanza must be the only stanza in the header")
                }
                guard stanza.arguments.count == 3 else {
                    throw AgeError.malformedHeader("an scrypt stanza must have a salt and a work factor")
                }
                guard let salt = RawBase64.decode(stanza.arguments[1]), salt.count == 16 else {
                    throw AgeError.malformedHeader("an scrypt salt is not canonical base64 of 16 bytes")
                }
                let factorText = stanza.arguments[2].utf8
                guard let first = factorText.first, (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(first),
                    factorText.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
                else { throw AgeError.malformedHeader("an scrypt work factor is not a decimal number without leading zeros") }
                guard factorText.count <= 9, let workFactor = Int(stanza.arguments[2]) else {
                    throw AgeError.malformedHeader("an scrypt work factor is out of range")
                }
                guard workFactor <= workFactorCeiling else {
                    throw AgeError.workFactorAboveCeiling(found: workFactor, ceiling: workFactorCeiling)
                }
                guard stanza.body.count == FileKeyWrap.wrappedByteCount else {
                    throw AgeError.malformedHeader("an scrypt stanza body is not 32 bytes")
                }
                let secret: SecretBytes
                do {
                    secret = try passphrase()
                } catch let error as AgeError {
                    throw error
                } catch {
                    throw .passphraseUnavailable(String(describing: error))
                }
                let wrapKey = try Self.deriveWrapKey(secret, salt: salt, workFactor: workFactor)
                return FileKeyWrap.open(stanza.body, with: wrapKey)
            }
            return nil
        }

        static func deriveWrapKey(_ passphrase: SecretBytes, salt: Data, workFactor: Int) throws(AgeError) -> SymmetricKey {
            let kdf = PasswordKDF.scrypt(logN: UInt8(workFactor), r: 8, p: 1)
            do {
                let key = try passphrase.withUnsafeBytes { bytes throws(SecureCoreError) in
                    try kdf.deriveKey(from: bytes, salt: ScryptRecipient.saltLabel + salt, outputByteCount: 32, limits: .unlimited)
                }
                return key.symmetricKey
            } catch {
                throw .scrypt(error)
            }
        }
    }
}
