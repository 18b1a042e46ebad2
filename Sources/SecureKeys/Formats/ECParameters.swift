import Foundation
import SecureCore
import SwiftASN1

/// The `EC PARAMETERS` PEM block that `openssl ecparam -genkey` writes before the `EC PRIVATE KEY`
/// block: the DER `ECParameters` of RFC 5480 §2.1.1, of which only the `namedCurve` choice (an
/// OBJECT IDENTIFIER) is accepted. It must name the curve of the key that follows.
enum ECParameters {
    static let begin = "-----BEGIN EC PARAMETERS-----"
    private static let end = "-----END EC PARAMETERS-----"

    /// Reads `EC PARAMETERS` followed by one `EC PRIVATE KEY` block, checking that both name the
    /// same curve.
    static func keyAfterParameters(_ text: String) throws(KeyError) -> ImportedKey {
        guard let stop = text.range(of: end) else { throw KeyError.malformedPEM("EC PARAMETERS block without its END line") }
        let parametersText = String(text[..<stop.upperBound])
        let rest = String(text[stop.upperBound...]).trimmingCharacters(in: .whitespacesAndNewlines)
        let document: PEM.Document
        do {
            document = try PEM.decode(parametersText, expectedLabel: "EC PARAMETERS")
        } catch {
            throw .pem(error)
        }
        let curve = try namedCurve(document.der)
        // Only what `openssl ecparam -genkey` writes: not a public key, nor any other block.
        guard rest.hasPrefix("-----BEGIN EC PRIVATE KEY-----") else {
            throw KeyError.malformedPEM("EC PARAMETERS must be followed by the EC PRIVATE KEY block (openssl ecparam -genkey)")
        }
        let key = try KeyImport.key(from: Data(rest.utf8))
        guard key.publicKey.type == curve else {
            throw KeyError.invalidKey("EC PARAMETERS name \(curve.rawValue) but the key is \(key.publicKey.type.rawValue)")
        }
        return key
    }

    /// The key type of a `namedCurve` ECParameters DER; explicit and implicit parameters are refused.
    static func namedCurve(_ der: Data) throws(KeyError) -> KeyType {
        let oid: ASN1ObjectIdentifier
        do {
            oid = try ASN1ObjectIdentifier(derEncoded: Array(der))
        } catch {
            throw KeyError.unsupportedAlgorithm(
                "EC PARAMETERS must name a curve (openssl ecparam -param_enc named_curve); explicit parameters are not supported")
        }
        switch oid {
        case OID.p256: return .p256
        case OID.p384: return .p384
        case OID.p521: return .p521
        default: throw KeyError.unsupportedAlgorithm("EC curve \(oid)")
        }
    }
}
