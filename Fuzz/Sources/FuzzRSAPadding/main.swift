import Crypto
import Foundation
import FuzzSupport
@_spi(Fuzzing) import SecureRSA
import SecureCore
import SecureKeys

// SecureRSA's padding decoders on chosen encoded messages, past the RSA arithmetic (which a fuzzer
// cannot steer through): input = selector (1 byte) || EM (padded or cut to k = 256 bytes).
//  selector bit 0 clear: OAEP's constant-time unpadding (SHA-256 label hash, MGF1 over SHA-256 or,
//    with bit 1, SHA-1), checking that an accepted encoding's message lies inside EM;
//  bit 0 set: EMSA-PSS-VERIFY (SHA-256; modBits 2048, or 2041 with bit 1, where EM is one byte
//    shorter than k), with the salt length recovered or, with bit 2, exactly the next byte;
//    a signature valid for an exact salt length must be valid with the length recovered.
// Seeds: well-formed OAEP encodings and the encoded messages of PSS signatures by the fixed key.
let k = 256
let labelHash = Array(SHA256.hash(data: Data("age-encryption.org/v1/ssh-rsa".utf8)))
let messageHash = Array(SHA256.hash(data: Data("fuzz".utf8)))
guard case .rsa(let rsa) = try! KeyImport.privateKey(from: Data(FixedKeys.rsa.utf8)) else { fatalError("not RSA") }
let (n, e) = rsa.publicKey.components
let publicKey = try! RSAPublicOperation(modulus: n, exponent: e)

Fuzz.main(seeds: {
    var seeds: [Data] = []
    for length in [0, 16, 190] {
        let em = try OAEP.encode(SecretBytes.random(count: length), label: Data("age-encryption.org/v1/ssh-rsa".utf8),
                                 modulusByteCount: k, hash: SHA256.self, mgfHash: SHA256.self)
        seeds.append(Data([0]) + em.withUnsafeBytes { Data($0) })
    }
    let signature = try AsymmetricPrivateKey.rsa(rsa).signature(for: Data("fuzz".utf8), scheme: .rsaPSS)
    let em = try publicKey.apply(signature)
    seeds.append(Data([1]) + em)
    seeds.append(Data([5, 32]) + em)
    return seeds
}) { input in
    guard let selector = input.first else { return }
    var body = Array(input.dropFirst())
    let exactSalt = selector & 4 != 0 ? Int(body.first ?? 0) : nil
    if exactSalt != nil { body = Array(body.dropFirst()) }
    var em = Array(body.prefix(k)) + [UInt8](repeating: 0, count: max(0, k - body.count))
    if selector & 1 == 0 {
        let (good, start) = em.withUnsafeMutableBytes { buffer in
            selector & 2 == 0
                ? OAEP.unpad(buffer, labelHash: labelHash, mgfHash: SHA256.self)
                : OAEP.unpad(buffer, labelHash: labelHash, mgfHash: Insecure.SHA1.self)
        }
        precondition(good == 0 || good == UInt.max, "good is a mask")
        if good == UInt.max { precondition(start > 1 + 2 * 32 && start <= k, "message offset outside EM") }
    } else {
        let bits = selector & 2 == 0 ? 2048 : 2041
        if bits == 2041 { em[0] = 0 }
        let recovered = PSSVerifier.isValidEncoding(em, messageHash: messageHash, modulusBits: bits, hash: SHA256.self,
                                                    mgfHash: SHA256.self, saltLength: .any)
        if let exactSalt {
            let exact = PSSVerifier.isValidEncoding(em, messageHash: messageHash, modulusBits: bits, hash: SHA256.self,
                                                    mgfHash: SHA256.self, saltLength: .exactly(exactSalt))
            precondition(!exact || recovered, "valid for an exact salt length but not with the length recovered")
        }
    }
}
