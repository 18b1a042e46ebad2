import Foundation
import FuzzSupport
import SecureKeys

// Signature verification for every scheme: input = selector (1 byte) || u16be signature length ||
// signature || message. The selector picks key and scheme; bit 7 uses the base64 text API.
let rsa = try! KeyImport.privateKey(from: Data(FixedKeys.rsa.utf8))
let p256 = try! KeyImport.privateKey(from: Data(FixedKeys.p256.utf8))
let ed25519 = try! KeyImport.privateKey(from: Data(FixedKeys.ed25519.utf8))
let cases: [(AsymmetricPrivateKey, SignatureScheme)] = [
    (rsa, .rsaPSS), (rsa, .rsaPKCS1v15), (p256, .ecdsaDER), (p256, .ecdsaRaw), (ed25519, .ed25519),
]

Fuzz.main(seeds: {
    var seeds: [Data] = []
    for (index, (key, scheme)) in cases.enumerated() {
        let message = Data("hello signature".utf8)
        let signature = try key.signature(for: message, scheme: scheme)
        seeds.append(Data([UInt8(index), UInt8(signature.count >> 8), UInt8(signature.count & 0xff)]) + signature + message)
        let text = Data(try key.signature(for: "hello", scheme: scheme).utf8)
        seeds.append(Data([UInt8(index) | 0x80, UInt8(text.count >> 8), UInt8(text.count & 0xff)]) + text + Data("hello".utf8))
    }
    return seeds
}) { input in
    guard input.count >= 3 else { return }
    let bytes = [UInt8](input)
    let (key, scheme) = cases[Int(bytes[0] & 0x7f) % cases.count]
    let length = min(Int(bytes[1]) << 8 | Int(bytes[2]), bytes.count - 3)
    let signature = Data(bytes[3..<3 + length]), message = Data(bytes[(3 + length)...])
    if bytes[0] & 0x80 == 0 {
        _ = key.publicKey.isValidSignature(signature, for: message, scheme: scheme)
        _ = key.publicKey.isValidSignature(signature, for: message)
    } else {
        _ = key.publicKey.isValidSignature(
            base64: String(decoding: signature, as: UTF8.self), for: String(decoding: message, as: UTF8.self), scheme: scheme)
    }
}
