import Crypto
import Foundation
import SFTestSupport
import SecureCore
import SecureKeys
import Testing

@Suite struct KeyFormatTests {
    static let types: [KeyType] = [.rsa2048, .p256, .p384, .p521, .ed25519, .x25519]

    @Test(arguments: types)
    func everyFormatRoundTrips(type: KeyType) throws {
        let key = Fixtures.key(type).key
        let passphrase = SecretBytes(Data("correct horse".utf8))
        let expectedPKCS8 = key.pkcs8DERRepresentation
        for format in KeyExportFormat.allCases {
            let applicable: Bool
            switch format {
            case .pkcs1, .pkcs1DER: applicable = type == .rsa2048
            case .openssh: applicable = type != .x25519
            case .x963: applicable = [.p256, .p384, .p521].contains(type)
            default: applicable = true
            }
            guard applicable else {
                #expect(keyError { _ = try key.exported(as: format) }.map { if case .notApplicable = $0 { true } else { false } } == true,
                        "\(format) for \(type)")
                continue
            }
            let exported = try key.exported(as: format, passphrase: passphrase, iterations: 1000).data
            let imported = try KeyImport.key(from: exported, passphrase: passphrase)
            #expect(imported.publicKey.fingerprint == key.publicKey.fingerprint, "\(format) for \(type)")
            if format.isPrivate || format == .jwk || format == .pkcs1 || format == .pkcs1DER {
                guard case .private(let privateKey) = imported else {
                    Issue.record("\(format) did not import as a private key")
                    continue
                }
                #expect(privateKey.pkcs8DERRepresentation == expectedPKCS8, "\(format) for \(type)")
            }
            // The public half exported from the public key alone matches too.
            if !format.isPrivate {
                let publicExport = try key.publicKey.exported(as: format)
                #expect(try KeyImport.publicKey(from: publicExport).fingerprint == key.publicKey.fingerprint)
            }
        }
    }

    @Test func encryptedPKCS8NeedsTheRightPassphraseAndRespectsTheCeiling() throws {
        let key = Fixtures.p256.key
        let pem = try key.exported(as: .pkcs8Encrypted, passphrase: SecretBytes(Data("pw".utf8)), iterations: 2000).data
        #expect(keyError { _ = try KeyImport.key(from: pem) } == .passphraseRequired)
        #expect(keyError { _ = try KeyImport.key(from: pem, passphrase: SecretBytes(Data("wrong".utf8))) } == .wrongPassphrase)
        let limits = KDFLimits(maxPBKDF2Rounds: 1999)
        #expect(keyError { _ = try KeyImport.key(from: pem, passphrase: SecretBytes(Data("pw".utf8)), limits: limits) }
            .map { if case .costAboveCeiling = $0 { true } else { false } } == true)
        #expect(try KeyImport.privateKey(from: pem, passphrase: SecretBytes(Data("pw".utf8))).publicKey.fingerprint == key.publicKey.fingerprint)
    }

    @Test func rsaFromModulusAndExponent() throws {
        guard case .rsa(let key) = Fixtures.rsa2048.key else { return }
        let (modulus, exponent) = key.publicKey.components
        #expect(exponent == Data([1, 0, 1]))
        #expect(modulus.count == 256)
        let rebuilt = try RSAPublicKey(modulus: Data([0]) + modulus, exponent: exponent)
        #expect(AsymmetricPublicKey.rsa(rebuilt).fingerprint == Fixtures.rsa2048.key.publicKey.fingerprint)
        #expect(keyError { _ = try RSAPublicKey(modulus: Data([0xc0]) + modulus.dropFirst(65), exponent: exponent) } == .unsupportedKeySize(1536))
        #expect(keyError { _ = try RSAPublicKey(modulus: modulus, exponent: Data([2])) }.map { if case .invalidKey = $0 { true } else { false } } == true)
    }

    @Test func fingerprintIsSHA256OfSPKI() throws {
        let key = Fixtures.ed25519.key.publicKey
        let digest = Data(SHA256.hash(data: key.spkiDERRepresentation))
        #expect(key.fingerprint.bytes == digest)
        #expect(key.fingerprint.hex == Hex.encode(digest))
        #expect(key.fingerprint.base64 == Base64.encode(digest))
        #expect(key.fingerprint.description == "sha256-spki:" + Hex.encode(digest))
    }

    @Test func malformedInputsGetSpecificErrors() throws {
        let spki = Fixtures.p256.key.publicKey.spkiDERRepresentation
        var offCurve = Fixtures.p256.key.publicKey.exported(as: .x963, orEmpty: ())
        offCurve[offCurve.count - 1] ^= 1
        let cases: [(String, Data, (KeyError) -> Bool)] = [
            ("empty", Data(), { $0 == .unrecognizedKeyFormat }),
            ("garbage", Data([0xde, 0xad]), { $0 == .unrecognizedKeyFormat }),
            ("bad PEM body", Data("-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----\n".utf8), { if case .malformedPEM = $0 { true } else { false } }),
            ("certificate", Data(PEM.encode(spki, label: "CERTIFICATE").utf8), { if case .malformedPEM = $0 { true } else { false } }),
            ("mismatched END", Data("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8), { if case .malformedPEM = $0 { true } else { false } }),
            ("SPKI with trailing byte", spki + Data([0]), { if case .malformedDER = $0 { true } else { false } }),
            ("unknown algorithm", Self.spki(oid: [0x2a, 0x03, 0x04], key: Data(repeating: 1, count: 32)), { if case .unsupportedAlgorithm = $0 { true } else { false } }),
            ("point off the curve", offCurve, { if case .invalidKey = $0 { true } else { false } }),
            ("ssh garbage", Data("ssh-ed25519 AAAA".utf8), { $0 == .sshKey(.truncated) }),
            ("ssh unknown type", Data("ssh-dss AAAAB3NzaC1kc3M=".utf8), { $0 == .sshKey(.unsupportedKeyType("ssh-dss")) }),
            ("jwk missing x", Data(#"{"kty":"OKP","crv":"Ed25519"}"#.utf8), { if case .malformedJWK = $0 { true } else { false } }),
            ("jwk oct", Data(#"{"kty":"oct","k":"AAAA"}"#.utf8), { if case .unsupportedAlgorithm = $0 { true } else { false } }),
            ("jwk not json", Data("{kty".utf8), { if case .malformedJWK = $0 { true } else { false } }),
        ]
        for (name, input, matches) in cases {
            let error = keyError { _ = try KeyImport.key(from: input) }
            #expect(error.map(matches) == true, "\(name): \(String(describing: error))")
        }
    }

    @Test(arguments: [KeyType.rsa2048, .p256, .ed25519, .x25519])
    func everyTruncationOfDERIsRejected(type: KeyType) throws {
        let key = Fixtures.key(type).key
        let spki = key.publicKey.spkiDERRepresentation
        let pkcs8 = key.pkcs8DERRepresentation.data
        for der in [spki, pkcs8] {
            for length in 1..<der.count {
                let error = keyError { _ = try KeyImport.key(from: der.prefix(length)) }
                #expect(error.map { if case .malformedDER = $0 { true } else { $0 == .unrecognizedKeyFormat } } == true,
                        "\(type) truncated to \(length): \(String(describing: error))")
            }
        }
    }

    /// A private key file whose parts disagree (the curve SEC1 names against its scalar or the
    /// PKCS#8 algorithm, or a stored public key that is another key's) is refused, as by
    /// `openssl pkey -check`, not read as a key whose fingerprint is not the one it signs with.
    @Test func privateKeysWhosePartsDisagreeAreRefused() throws {
        func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            [tag] + (content.count < 128 ? [UInt8(content.count)] : [0x81, UInt8(content.count)]) + content
        }
        let p256OID: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        let p384OID: [UInt8] = [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22]
        let ecPublicKeyOID: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
        let key = P256.Signing.PrivateKey(), other = P256.Signing.PrivateKey()
        func sec1(curve: [UInt8]?, publicKey: Data?) -> [UInt8] {
            var content = tlv(0x02, [1]) + tlv(0x04, [UInt8](key.rawRepresentation))
            if let curve { content += tlv(0xA0, curve) }
            if let publicKey { content += tlv(0xA1, tlv(0x03, [0] + [UInt8](publicKey))) }
            return tlv(0x30, content)
        }
        func pkcs8(_ inner: [UInt8], algorithm: [UInt8], publicKey: Data? = nil) -> Data {
            var content = tlv(0x02, [publicKey == nil ? 0 : 1]) + tlv(0x30, algorithm) + tlv(0x04, inner)
            if let publicKey { content += tlv(0x81, [0] + [UInt8](publicKey)) }
            return Data(tlv(0x30, content))
        }
        let own = key.publicKey.x963Representation, another = other.publicKey.x963Representation
        // Whole and consistent: read, with or without the optional parts.
        for consistent in [
            Data(sec1(curve: p256OID, publicKey: own)), Data(sec1(curve: nil, publicKey: nil)),
            Data(sec1(curve: p256OID, publicKey: key.publicKey.compressedRepresentation)),  // openssl ec -conv_form compressed
            pkcs8(sec1(curve: nil, publicKey: own), algorithm: ecPublicKeyOID + p256OID, publicKey: own),
        ] {
            #expect(try KeyImport.privateKey(from: consistent).publicKey.fingerprint == AsymmetricPublicKey.p256(key.publicKey).fingerprint)
        }
        let edKey = Curve25519.Signing.PrivateKey()
        let edPKCS8 = pkcs8(tlv(0x04, [UInt8](edKey.rawRepresentation)), algorithm: [0x06, 0x03, 0x2B, 0x65, 0x70],
                            publicKey: Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)
        let cases: [(String, Data)] = [
            ("SEC1 naming P-384 around a P-256 scalar", Data(sec1(curve: p384OID, publicKey: nil))),
            ("SEC1 with another key's public key", Data(sec1(curve: p256OID, publicKey: another))),
            ("PKCS#8 P-256 whose SEC1 names P-384", pkcs8(sec1(curve: p384OID, publicKey: nil), algorithm: ecPublicKeyOID + p256OID)),
            ("PKCS#8 P-256 with another key's public key", pkcs8(sec1(curve: nil, publicKey: own), algorithm: ecPublicKeyOID + p256OID, publicKey: another)),
            ("PKCS#8 P-384 around a P-256 scalar", pkcs8(sec1(curve: nil, publicKey: nil), algorithm: ecPublicKeyOID + p384OID)),
            ("PKCS#8 Ed25519 with another key's public key", edPKCS8),
        ]
        for (name, der) in cases {
            for input in [der, Data(PEM.encode(der, label: name.hasPrefix("SEC1") ? "EC PRIVATE KEY" : "PRIVATE KEY").utf8)] {
                let error = keyError { _ = try KeyImport.key(from: input) }
                #expect(error.map { if case .invalidKey = $0 { true } else if case .malformedDER = $0 { true } else { false } } == true,
                        "\(name): \(String(describing: error))")
            }
        }
    }

    @Test func mismatchedJWKMembersAreRejected() throws {
        let jwk = try Fixtures.p256.key.exported(as: .jwk).data
        var object = try JSONSerialization.jsonObject(with: jwk) as! [String: String]
        object["x"] = try Fixtures.otherP256.publicKey.exported(as: .jwk).json("x")
        let tampered = try JSONSerialization.data(withJSONObject: object)
        #expect(keyError { _ = try KeyImport.key(from: tampered) }.map { if case .invalidKey = $0 { true } else { false } } == true)
    }

    // Published vectors: skipped when Tests/Vectors is absent, a failure under CI.
    @Test(.requiresVectors) func wycheproofJWKMatchesItsDER() throws {
        let file = try WycheproofFile.required("ed25519_test.json")
        let group = file.testGroups[0]
        let jwk = try JSONSerialization.data(withJSONObject: JSONSerialization.jsonObject(with: JSONEncoder().encode(group["publicKeyJwk"]!.object!.mapValues { $0.string ?? "" })))
        let der = Data(hexString: group["publicKeyDer"]!.string!)
        #expect(try KeyImport.publicKey(from: jwk).spkiDERRepresentation == der)
        #expect(try KeyImport.publicKey(from: Data(group["publicKeyPem"]!.string!.utf8)).spkiDERRepresentation == der)
    }

    /// An SPKI with an arbitrary algorithm OID (content bytes) and key.
    static func spki(oid: [UInt8], key: Data) -> Data {
        let algorithm = Data([0x30, UInt8(oid.count + 2), 0x06, UInt8(oid.count)] + oid)
        let bitString = Data([0x03, UInt8(key.count + 1), 0x00]) + key
        let body = algorithm + bitString
        return Data([0x30, UInt8(body.count)]) + body
    }
}

extension AsymmetricPublicKey {
    func exported(as format: KeyExportFormat, orEmpty: Void) -> Data { (try? exported(as: format)) ?? Data() }
}

extension Data {
    func json(_ member: String) throws -> String {
        (try JSONSerialization.jsonObject(with: self) as! [String: Any])[member] as! String
    }
}
