import Crypto
import Foundation
import SecureCore
import CryptoExtras

/// The RSA schemes of the native hybrid format: `wrapped key (modulus bytes) || nonce (12) || ciphertext || tag (16)`.
/// `wrapped key` is RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) of a fresh 32-byte AES-256-GCM key;
/// the GCM associated data is every byte before the ciphertext. In the signed scheme the plaintext is
/// `RSA-PSS-SHA256(sender, SHA-256(aad || message)) || message`.
enum RSAHybrid {
    static func seal(
        _ message: Data, to recipient: RSAPublicKey, recipientID: Data, sender: AsymmetricPrivateKey?, senderID: Data?
    ) throws(KeyError) -> Data {
        guard recipient.keySize.isModern else { throw KeyError.unsupportedKeySize(recipient.keySize.rawValue) }
        var senderKey: RSAPrivateKey?
        if let sender {
            guard case .rsa(let key) = sender, key.publicKey.keySize.isModern else {
                throw KeyError.wrongKeyType(expected: "an RSA sender key of 2048 bits or more", found: sender.type.rawValue)
            }
            senderKey = key
        }
        let fileKey = SymmetricKey(size: .bits256)
        let wrapped = try recipient.wrap(SecretBytes(fileKey))
        let nonce = AES.GCM.Nonce()
        let header = HybridMessage(scheme: senderKey == nil ? .rsaOAEP : .rsaOAEPSigned, recipient: recipientID, sender: senderID).prefix
        let aad = header + wrapped + Data(nonce)
        var plaintext = message
        if let senderKey {
            plaintext = try senderKey.signature(for: aad + message, scheme: .rsaPSS) + message
        }
        let sealed: AES.GCM.SealedBox
        do {
            sealed = try AES.GCM.seal(plaintext, using: fileKey, nonce: nonce, authenticating: aad)
        } catch {
            throw KeyError.invalidKey("AES-GCM refused the file key")  // not reached: a fresh 256-bit key
        }
        return aad + sealed.ciphertext + sealed.tag
    }

    static func open(_ rest: Data, with key: RSAPrivateKey, header: Data, sender: AsymmetricPublicKey?) throws(KeyError) -> Data {
        guard key.publicKey.keySize.isModern else { throw KeyError.unsupportedKeySize(key.publicKey.keySize.rawValue) }
        let wrappedLength = key.publicKey.modulusByteCount
        guard rest.count >= wrappedLength + 12 + 16 else { throw KeyError.truncated }
        let wrapped = rest.prefix(wrappedLength)
        let nonceBytes = rest.dropFirst(wrappedLength).prefix(12)
        let body = rest.dropFirst(wrappedLength + 12)
        let aad = header + wrapped + nonceBytes
        let plaintext: Data
        do {
            let fileKey = try key.unwrap(wrapped)
            guard fileKey.count == 32 else { throw KeyError.authenticationFailed }
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonceBytes), ciphertext: body.dropLast(16), tag: body.suffix(16))
            plaintext = try AES.GCM.open(box, using: fileKey.symmetricKey, authenticating: aad)
        } catch {
            throw KeyError.authenticationFailed
        }
        guard let sender else { return plaintext }
        guard case .rsa(let senderKey) = sender, senderKey.keySize.isModern else {
            throw KeyError.unexpectedSender(fingerprint: sender.fingerprint.hex)
        }
        let signatureLength = senderKey.modulusByteCount
        guard plaintext.count >= signatureLength else { throw KeyError.authenticationFailed }
        let message = plaintext.dropFirst(signatureLength)
        guard (try? senderKey.isValidSignature(plaintext.prefix(signatureLength), for: aad + message, scheme: .rsaPSS)) == true else {
            throw KeyError.authenticationFailed
        }
        return Data(message)
    }
}
