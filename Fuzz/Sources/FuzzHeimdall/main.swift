import Foundation
import FuzzSupport
import SecureKeys

// Heimdall payloads (RSA-OAEP-SHA1 wrapped key || AES-CBC body), binary and base64 text, and
// Heimdall base64 signatures, with a fixed RSA-1024 key (Heimdall's legacy size; fast per input).
guard case .rsa(let key) = try! KeyImport.privateKey(from: Data(FixedKeys.rsa1024.utf8)) else { fatalError("not RSA") }

Fuzz.main(seeds: {
    var seeds: [Data] = []
    for message in ["", "hello heimdall", String(repeating: "h", count: 100)] {
        seeds.append(try Heimdall.encrypt(Data(message.utf8), to: key.publicKey))
        seeds.append(Data(try Heimdall.encrypt(message, to: key.publicKey).utf8))
        seeds.append(Data(try Heimdall.encrypt(message, to: key.publicKey, urlEncode: true).utf8))
    }
    return seeds
}) { input in
    _ = try? Heimdall.decrypt(input, with: key)
    let text = String(decoding: input, as: UTF8.self)
    _ = try? Heimdall.decodeBase64(text)
    _ = try? Heimdall.decrypt(text, with: key)
    _ = Heimdall.verify(base64: text, for: "message", with: key.publicKey)
}
