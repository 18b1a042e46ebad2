import SwiftASN1

/// PKCS#8 `EncryptedPrivateKeyInfo ::= SEQUENCE { encryptionAlgorithm AlgorithmIdentifier, encryptedData OCTET STRING }`
/// (RFC 5958 §3), restricted to PBES2 (RFC 8018 §6.2) with PBKDF2 and AES-CBC.
struct EncryptedPrivateKeyInfo: DERImplicitlyTaggable, Sendable {
    static var defaultIdentifier: ASN1Identifier { .sequence }

    var parameters: PBES2Parameters
    var encryptedData: [UInt8]

    init(parameters: PBES2Parameters, encryptedData: [UInt8]) {
        self.parameters = parameters
        self.encryptedData = encryptedData
    }

    init(derEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try DER.sequence(rootNode, identifier: identifier) { nodes in
            let algorithm = try AlgorithmIdentifier(derEncoded: &nodes)
            guard algorithm.algorithm == OID.pbes2, let parameters = algorithm.parameters else {
                throw KeyError.unsupportedAlgorithm("private key encryption \(algorithm.algorithm) (only PBES2 is supported)")
            }
            let data = try ASN1OctetString(derEncoded: &nodes)
            return EncryptedPrivateKeyInfo(parameters: try PBES2Parameters(asn1Any: parameters), encryptedData: Array(data.bytes))
        }
    }

    func serialize(into coder: inout DER.Serializer, withIdentifier identifier: ASN1Identifier) throws {
        try coder.appendConstructedNode(identifier: identifier) { coder in
            try coder.serialize(AlgorithmIdentifier(algorithm: OID.pbes2, parameters: try ASN1Any(erasing: parameters)))
            try coder.serialize(ASN1OctetString(contentBytes: encryptedData[...]))
        }
    }
}

/// `PBES2-params ::= SEQUENCE { keyDerivationFunc AlgorithmIdentifier {PBKDF2}, encryptionScheme AlgorithmIdentifier }`
/// with `PBKDF2-params ::= SEQUENCE { salt OCTET STRING, iterationCount INTEGER, keyLength INTEGER OPTIONAL,
/// prf AlgorithmIdentifier DEFAULT hmacWithSHA1 }` and an AES-CBC scheme whose parameter is the 16-byte IV.
struct PBES2Parameters: DERImplicitlyTaggable, Sendable {
    static var defaultIdentifier: ASN1Identifier { .sequence }

    var salt: [UInt8]
    var iterations: Int
    var prf: ASN1ObjectIdentifier
    var cipher: ASN1ObjectIdentifier
    var iv: [UInt8]

    init(salt: [UInt8], iterations: Int, prf: ASN1ObjectIdentifier, cipher: ASN1ObjectIdentifier, iv: [UInt8]) {
        self.salt = salt
        self.iterations = iterations
        self.prf = prf
        self.cipher = cipher
        self.iv = iv
    }

    /// The AES key length the cipher identifier names.
    static func keyLength(of cipher: ASN1ObjectIdentifier) -> Int? {
        switch cipher {
        case OID.aes128CBC: 16
        case OID.aes192CBC: 24
        case OID.aes256CBC: 32
        default: nil
        }
    }

    init(derEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try DER.sequence(rootNode, identifier: identifier) { nodes in
            let kdf = try AlgorithmIdentifier(derEncoded: &nodes)
            guard kdf.algorithm == OID.pbkdf2, let kdfParameters = kdf.parameters else {
                throw KeyError.unsupportedAlgorithm("PBES2 key derivation \(kdf.algorithm) (only PBKDF2 is supported)")
            }
            let scheme = try AlgorithmIdentifier(derEncoded: &nodes)
            guard let keyLength = Self.keyLength(of: scheme.algorithm) else {
                throw KeyError.unsupportedAlgorithm("PBES2 cipher \(scheme.algorithm) (only AES-CBC is supported)")
            }
            guard let ivParameter = scheme.parameters else { throw ASN1Error.invalidASN1Object(reason: "AES-CBC IV missing") }
            let iv = try ASN1OctetString(asn1Any: ivParameter)
            guard iv.bytes.count == 16 else { throw ASN1Error.invalidASN1Object(reason: "AES-CBC IV is not 16 bytes") }

            let pbkdf2 = try PBKDF2Parameters(asn1Any: kdfParameters)
            if let declared = pbkdf2.keyLength, declared != keyLength {
                throw ASN1Error.invalidASN1Object(reason: "PBKDF2 key length does not match the cipher")
            }
            return PBES2Parameters(
                salt: pbkdf2.salt, iterations: pbkdf2.iterations, prf: pbkdf2.prf, cipher: scheme.algorithm,
                iv: Array(iv.bytes))
        }
    }

    func serialize(into coder: inout DER.Serializer, withIdentifier identifier: ASN1Identifier) throws {
        try coder.appendConstructedNode(identifier: identifier) { coder in
            let pbkdf2 = PBKDF2Parameters(salt: salt, iterations: iterations, keyLength: nil, prf: prf)
            try coder.serialize(AlgorithmIdentifier(algorithm: OID.pbkdf2, parameters: try ASN1Any(erasing: pbkdf2)))
            try coder.serialize(AlgorithmIdentifier(algorithm: cipher, parameters: try ASN1Any(erasing: ASN1OctetString(contentBytes: iv[...]))))
        }
    }
}

/// `PBKDF2-params ::= SEQUENCE { salt OCTET STRING, iterationCount INTEGER, keyLength INTEGER OPTIONAL,
/// prf AlgorithmIdentifier DEFAULT hmacWithSHA1 }` (RFC 8018 A.2). The PRF is always written, with NULL
/// parameters, as OpenSSL writes it.
struct PBKDF2Parameters: DERImplicitlyTaggable, Sendable {
    static var defaultIdentifier: ASN1Identifier { .sequence }

    var salt: [UInt8]
    var iterations: Int
    var keyLength: Int?
    var prf: ASN1ObjectIdentifier

    init(salt: [UInt8], iterations: Int, keyLength: Int?, prf: ASN1ObjectIdentifier) {
        self.salt = salt
        self.iterations = iterations
        self.keyLength = keyLength
        self.prf = prf
    }

    init(derEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try DER.sequence(rootNode, identifier: identifier) { nodes in
            let salt = try ASN1OctetString(derEncoded: &nodes)
            let iterations = try Int(derEncoded: &nodes)
            guard iterations >= 1 else { throw ASN1Error.invalidASN1Object(reason: "PBKDF2 iteration count below 1") }
            let keyLength: Int? = try DER.optionalImplicitlyTagged(&nodes, tag: .integer)
            let prf: AlgorithmIdentifier? = try DER.optionalImplicitlyTagged(&nodes, tag: .sequence)
            return PBKDF2Parameters(
                salt: Array(salt.bytes), iterations: iterations, keyLength: keyLength,
                prf: prf?.algorithm ?? OID.hmacWithSHA1)
        }
    }

    func serialize(into coder: inout DER.Serializer, withIdentifier identifier: ASN1Identifier) throws {
        try coder.appendConstructedNode(identifier: identifier) { coder in
            try coder.serialize(ASN1OctetString(contentBytes: salt[...]))
            try coder.serialize(iterations)
            if let keyLength { try coder.serialize(keyLength) }
            try coder.serialize(AlgorithmIdentifier(algorithm: prf, parameters: try ASN1Any(erasing: ASN1Null())))
        }
    }
}
