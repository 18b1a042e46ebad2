import Crypto
import Foundation
import SecureCore

/// JSON Web Keys: RFC 7517/7518 (`RSA`, `EC` with P-256/384/521) and RFC 8037 (`OKP` with
/// Ed25519/X25519), public and private. Members are unpadded base64url; other members are ignored.
enum JSONWebKey {
    private struct Members: Codable {
        var kty: String
        var crv: String?
        var x, y, d: String?
        var n, e, p, q, dp, dq, qi: String?
    }

    static func encode(_ key: AsymmetricPublicKey) throws(KeyError) -> String {
        try render(members(of: key))
    }

    static func encode(_ key: AsymmetricPrivateKey) throws(KeyError) -> String {
        var result = try members(of: key.publicKey)
        switch key {
        case .rsa(let rsa):
            let s = rsa.structure
            result.d = b64(s.privateExponent)
            result.p = b64(s.prime1)
            result.q = b64(s.prime2)
            result.dp = b64(s.exponent1)
            result.dq = b64(s.exponent2)
            result.qi = b64(s.coefficient)
        case .p256(let ec): result.d = b64(ec.rawRepresentation)
        case .p384(let ec): result.d = b64(ec.rawRepresentation)
        case .p521(let ec): result.d = b64(ec.rawRepresentation)
        case .ed25519(let ed): result.d = b64(ed.rawRepresentation)
        case .x25519(let x): result.d = b64(x.rawRepresentation)
        }
        return try render(result)
    }

    /// Reads a JWK; a private key when it has `d`, otherwise a public key.
    static func decode(_ json: Data) throws(KeyError) -> ImportedKey {
        let jwk: Members
        do {
            jwk = try JSONDecoder().decode(Members.self, from: json)
        } catch {
            throw KeyError.malformedJWK("not a JSON object with a string `kty`")
        }
        switch jwk.kty {
        case "RSA":
            let n = try field(jwk.n, "n"), e = try field(jwk.e, "e")
            guard let d = jwk.d else { return .public(.rsa(try RSAPublicKey(modulus: n, exponent: e))) }
            let crt = [jwk.p, jwk.q, jwk.dp, jwk.dq, jwk.qi]
            if crt.allSatisfy({ $0 == nil }) {
                // RFC 7518 §6.3.2: the CRT members are optional; recover p and q from n, e and d.
                return .private(.rsa(try RSAPrivateKey(modulus: n, publicExponent: e, privateExponent: try field(d, "d"))))
            }
            var numbers = [Data]()
            for (index, value) in crt.enumerated() {
                numbers.append(try field(value, ["p", "q", "dp", "dq", "qi"][index]))
            }
            let structure = RSAPrivateKeyStructure(
                modulus: unsigned(n), publicExponent: unsigned(e), privateExponent: unsigned(try field(d, "d")),
                prime1: unsigned(numbers[0]), prime2: unsigned(numbers[1]), exponent1: unsigned(numbers[2]),
                exponent2: unsigned(numbers[3]), coefficient: unsigned(numbers[4]))
            return .private(.rsa(try RSAPrivateKey(structure: structure)))
        case "EC":
            let x = try field(jwk.x, "x"), y = try field(jwk.y, "y")
            // RFC 7518 §6.2.1.2-3: each coordinate is the full length of the curve's field
            // (x of 31 bytes and y of 33 made the same point as 32 and 32).
            let coordinateLength = ["P-256": 32, "P-384": 48, "P-521": 66][jwk.crv ?? ""]
            if let coordinateLength, x.count != coordinateLength || y.count != coordinateLength {
                throw KeyError.malformedJWK("`x` and `y` must each be \(coordinateLength) bytes for \(jwk.crv ?? "")")
            }
            let point = Data([4]) + x + y
            let d = try jwk.d.map { d throws(KeyError) in try field(d, "d") }
            let key: ImportedKey
            switch jwk.crv {
            case "P-256":
                if let d { key = .private(.p256(try curveKey { try P256.Signing.PrivateKey(rawRepresentation: d) })) } else { key = .public(.p256(try curveKey { try P256.Signing.PublicKey(x963Representation: point) })) }
            case "P-384":
                if let d { key = .private(.p384(try curveKey { try P384.Signing.PrivateKey(rawRepresentation: d) })) } else { key = .public(.p384(try curveKey { try P384.Signing.PublicKey(x963Representation: point) })) }
            case "P-521":
                if let d { key = .private(.p521(try curveKey { try P521.Signing.PrivateKey(rawRepresentation: d) })) } else { key = .public(.p521(try curveKey { try P521.Signing.PublicKey(x963Representation: point) })) }
            default:
                throw KeyError.unsupportedAlgorithm("JWK curve \(jwk.crv.map(KeyError.quoted) ?? "(missing)")")
            }
            return try checked(key, x: x, y: y)
        case "OKP":
            let x = try field(jwk.x, "x")
            let d = try jwk.d.map { d throws(KeyError) in try field(d, "d") }
            let key: ImportedKey
            switch jwk.crv {
            case "Ed25519":
                if let d { key = .private(.ed25519(try curveKey { try Curve25519.Signing.PrivateKey(rawRepresentation: d) })) } else { key = .public(.ed25519(try ed25519PublicKey(x))) }
            case "X25519":
                if let d { key = .private(.x25519(try curveKey { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: d) })) } else { key = .public(.x25519(try curveKey { try Curve25519.KeyAgreement.PublicKey(rawRepresentation: x) })) }
            default:
                throw KeyError.unsupportedAlgorithm("JWK curve \(jwk.crv.map(KeyError.quoted) ?? "(missing)")")
            }
            return try checked(key, x: x, y: nil)
        default:
            throw KeyError.unsupportedAlgorithm("JWK key type \(KeyError.quoted(jwk.kty))")
        }
    }

    private static func members(of key: AsymmetricPublicKey) throws(KeyError) -> Members {
        switch key {
        case .rsa(let rsa):
            let components = rsa.components
            return Members(kty: "RSA", n: b64(components.modulus), e: b64(components.exponent))
        case .p256(let ec): return ecMembers("P-256", ec.x963Representation)
        case .p384(let ec): return ecMembers("P-384", ec.x963Representation)
        case .p521(let ec): return ecMembers("P-521", ec.x963Representation)
        case .ed25519(let ed): return Members(kty: "OKP", crv: "Ed25519", x: b64(ed.rawRepresentation))
        case .x25519(let x): return Members(kty: "OKP", crv: "X25519", x: b64(x.rawRepresentation))
        }
    }

    private static func ecMembers(_ curve: String, _ point: Data) -> Members {
        let coordinates = point.dropFirst()
        let half = coordinates.count / 2
        return Members(kty: "EC", crv: curve, x: b64(coordinates.prefix(half)), y: b64(coordinates.suffix(half)))
    }

    /// A private JWK's public members must describe the same key as its `d`.
    private static func checked(_ key: ImportedKey, x: Data, y: Data?) throws(KeyError) -> ImportedKey {
        guard case .private(let privateKey) = key else { return key }
        let expected = try members(of: privateKey.publicKey)
        guard expected.x == b64(x), expected.y == y.map(b64) else {
            throw KeyError.invalidKey("JWK public members do not match the private key")
        }
        return key
    }

    private static func field(_ value: String?, _ name: String) throws(KeyError) -> Data {
        guard let value else { throw KeyError.malformedJWK("member `\(name)` is missing") }
        guard let bytes = try? Base64URL.decode(value), !bytes.isEmpty else {
            throw KeyError.malformedJWK("member `\(name)` is not unpadded base64url")
        }
        return bytes
    }

    private static func unsigned(_ bytes: Data) -> ArraySlice<UInt8> { ArraySlice(bytes.drop(while: { $0 == 0 })) }

    private static func b64(_ bytes: some DataProtocol) -> String { Base64URL.encode(bytes) }

    private static func render(_ members: Members) throws(KeyError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return String(decoding: try encoder.encode(members), as: UTF8.self)
        } catch {
            throw KeyError.malformedJWK("the members cannot be encoded as JSON")  // not reached: strings only
        }
    }
}
