import Foundation
import SFTestSupport
import SecureCore
import SecureKeys
import Testing

/// Keys shared by every test (RSA generation is slow in debug builds): generated once per run by
/// `openssl genpkey` when available (which also proves OpenSSL's PKCS#8 output imports), otherwise
/// by our own generator.
enum Fixtures {
    static let directory: URL = try! TestSupport.temporaryDirectory("sf-keys")

    /// PKCS#8 PEM of a fresh key of `type`, and the parsed key.
    static func key(_ type: KeyType) -> (pem: String, key: AsymmetricPrivateKey) {
        switch type {
        case .rsa1024: rsa1024
        case .rsa2048: rsa2048
        case .rsa3072: rsa3072
        case .rsa4096: rsa4096
        case .p256: p256
        case .p384: p384
        case .p521: p521
        case .ed25519: ed25519
        case .x25519: x25519
        }
    }

    static let rsa1024 = make(.rsa1024, ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"])
    static let rsa2048 = make(.rsa2048, ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
    static let rsa3072 = make(.rsa3072, ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:3072"])
    static let rsa4096 = make(.rsa4096, ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:4096"])
    static let p256 = make(.p256, ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
    static let p384 = make(.p384, ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
    static let p521 = make(.p521, ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521"])
    static let ed25519 = make(.ed25519, ["-algorithm", "ED25519"])
    static let x25519 = make(.x25519, ["-algorithm", "X25519"])
    /// A second key of some types, for wrong-recipient and wrong-sender tests.
    static let otherX25519 = try! AsymmetricPrivateKey.generate(.x25519)
    static let otherP256 = try! AsymmetricPrivateKey.generate(.p256)
    static let otherRSA2048 = make(.rsa2048, ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]).key

    private static func make(_ type: KeyType, _ arguments: [String]) -> (pem: String, key: AsymmetricPrivateKey) {
        if TestSupport.which("openssl") != nil, let result = try? TestSupport.run("openssl", ["genpkey"] + arguments),
            result.status == 0
        {
            let key = try! KeyImport.privateKey(from: result.stdout)
            precondition(key.type == type, "openssl generated \(key.type), expected \(type)")
            return (result.stdoutText, key)
        }
        let key = try! AsymmetricPrivateKey.generate(type)
        return (String(decoding: try! key.exported(as: .pkcs8).withUnsafeBytes { Data($0) }, as: UTF8.self), key)
    }

    /// Writes `data` to a fresh file in the fixtures directory and returns its path.
    static func file(_ data: some DataProtocol, _ name: String = "f") throws -> String {
        let url = directory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try Data(data).write(to: url)
        return url.path
    }
}

/// The path of a peer script under Tests/peers.
func peerScript(_ name: String) -> String {
    TestSupport.packageRoot.appendingPathComponent("Tests/peers/\(name)").path
}

extension SecretBytes {
    var data: Data { withUnsafeBytes { Data($0) } }
}

/// Runs `body` and returns the `KeyError` it throws (nil when it does not throw a `KeyError`).
func keyError(_ body: () throws -> Void) -> KeyError? {
    do {
        try body()
        return nil
    } catch let error as KeyError {
        return error
    } catch {
        return nil
    }
}
