import SwiftASN1

/// Object identifiers for the key and cipher structures this module reads and writes.
enum OID {
    static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]
    static let ecPublicKey: ASN1ObjectIdentifier = [1, 2, 840, 10045, 2, 1]
    static let p256: ASN1ObjectIdentifier = [1, 2, 840, 10045, 3, 1, 7]
    static let p384: ASN1ObjectIdentifier = [1, 3, 132, 0, 34]
    static let p521: ASN1ObjectIdentifier = [1, 3, 132, 0, 35]
    static let x25519: ASN1ObjectIdentifier = [1, 3, 101, 110]
    static let ed25519: ASN1ObjectIdentifier = [1, 3, 101, 112]
    static let pbes2: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 5, 13]
    static let pbkdf2: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 5, 12]
    static let hmacWithSHA1: ASN1ObjectIdentifier = [1, 2, 840, 113549, 2, 7]
    static let hmacWithSHA256: ASN1ObjectIdentifier = [1, 2, 840, 113549, 2, 9]
    static let hmacWithSHA384: ASN1ObjectIdentifier = [1, 2, 840, 113549, 2, 10]
    static let hmacWithSHA512: ASN1ObjectIdentifier = [1, 2, 840, 113549, 2, 11]
    static let aes128CBC: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 1, 2]
    static let aes192CBC: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 1, 22]
    static let aes256CBC: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 1, 42]
}

/// `AlgorithmIdentifier ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY OPTIONAL }` (RFC 5280).
struct AlgorithmIdentifier: DERImplicitlyTaggable, Hashable, Sendable {
    static var defaultIdentifier: ASN1Identifier { .sequence }

    var algorithm: ASN1ObjectIdentifier
    var parameters: ASN1Any?

    init(algorithm: ASN1ObjectIdentifier, parameters: ASN1Any?) {
        self.algorithm = algorithm
        self.parameters = parameters
    }

    /// RSA's identifier carries an explicit NULL, as RFC 8017 requires.
    static let rsaEncryption = AlgorithmIdentifier(algorithm: OID.rsaEncryption, parameters: try! ASN1Any(erasing: ASN1Null()))

    init(derEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try DER.sequence(rootNode, identifier: identifier) { nodes in
            let algorithm = try ASN1ObjectIdentifier(derEncoded: &nodes)
            let parameters = nodes.next().map { ASN1Any(derEncoded: $0) }
            return AlgorithmIdentifier(algorithm: algorithm, parameters: parameters)
        }
    }

    func serialize(into coder: inout DER.Serializer, withIdentifier identifier: ASN1Identifier) throws {
        try coder.appendConstructedNode(identifier: identifier) { coder in
            try coder.serialize(algorithm)
            if let parameters { try coder.serialize(parameters) }
        }
    }
}

/// `SubjectPublicKeyInfo ::= SEQUENCE { algorithm AlgorithmIdentifier, subjectPublicKey BIT STRING }` (RFC 5280).
struct SubjectPublicKeyInfo: DERImplicitlyTaggable, Sendable {
    static var defaultIdentifier: ASN1Identifier { .sequence }

    var algorithm: AlgorithmIdentifier
    var key: [UInt8]

    init(algorithm: AlgorithmIdentifier, key: [UInt8]) {
        self.algorithm = algorithm
        self.key = key
    }

    init(derEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try DER.sequence(rootNode, identifier: identifier) { nodes in
            let algorithm = try AlgorithmIdentifier(derEncoded: &nodes)
            let bits = try ASN1BitString(derEncoded: &nodes)
            guard bits.paddingBits == 0 else { throw ASN1Error.invalidASN1Object(reason: "public key bit string is not whole bytes") }
            return SubjectPublicKeyInfo(algorithm: algorithm, key: Array(bits.bytes))
        }
    }

    func serialize(into coder: inout DER.Serializer, withIdentifier identifier: ASN1Identifier) throws {
        try coder.appendConstructedNode(identifier: identifier) { coder in
            try coder.serialize(algorithm)
            try coder.serialize(ASN1BitString(bytes: key[...]))
        }
    }
}

/// PKCS#8 `OneAsymmetricKey` (RFC 5958), versions 0 and 1: version, algorithm, privateKey, the
/// optional `[0] attributes` (read and not kept) and the optional `[1] publicKey` (kept, so that
/// the reader can check it is the private key's own).
struct OneAsymmetricKey: DERImplicitlyTaggable, Sendable {
    static var defaultIdentifier: ASN1Identifier { .sequence }

    var algorithm: AlgorithmIdentifier
    var privateKey: [UInt8]
    /// The `[1] publicKey` bits, when present.
    var publicKey: [UInt8]? = nil

    init(algorithm: AlgorithmIdentifier, privateKey: [UInt8]) {
        self.algorithm = algorithm
        self.privateKey = privateKey
    }

    init(derEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try DER.sequence(rootNode, identifier: identifier) { nodes in
            let version = try Int(derEncoded: &nodes)
            guard version == 0 || version == 1 else { throw ASN1Error.invalidASN1Object(reason: "PKCS#8 version \(version)") }
            let algorithm = try AlgorithmIdentifier(derEncoded: &nodes)
            let privateKey = try ASN1OctetString(derEncoded: &nodes)
            let attributesTag = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
            let publicKeyTag = ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)
            var publicKeyNode: ASN1Node?
            if let node = nodes.next() {
                guard node.identifier == attributesTag || node.identifier == publicKeyTag else {
                    throw ASN1Error.invalidASN1Object(reason: "unexpected PKCS#8 field")
                }
                if node.identifier == publicKeyTag {
                    publicKeyNode = node
                } else if let next = nodes.next() {
                    guard next.identifier == publicKeyTag else { throw ASN1Error.invalidASN1Object(reason: "unexpected PKCS#8 field") }
                    publicKeyNode = next
                }
            }
            let publicKey = try publicKeyNode.map { try ASN1BitString(derEncoded: $0, withIdentifier: publicKeyTag) }
            if let publicKey, publicKey.paddingBits != 0 { throw ASN1Error.invalidASN1Object(reason: "PKCS#8 public key is not whole bytes") }
            var key = OneAsymmetricKey(algorithm: algorithm, privateKey: Array(privateKey.bytes))
            key.publicKey = publicKey.map { Array($0.bytes) }
            return key
        }
    }

    func serialize(into coder: inout DER.Serializer, withIdentifier identifier: ASN1Identifier) throws {
        try coder.appendConstructedNode(identifier: identifier) { coder in
            try coder.serialize(0)
            try coder.serialize(algorithm)
            try coder.serialize(ASN1OctetString(contentBytes: privateKey[...]))
        }
    }
}

/// SEC1 `ECPrivateKey` (RFC 5915): version 1, the private scalar, and the optional `[0]` named
/// curve and `[1]` public key (uncompressed point), each explicitly tagged.
struct ECPrivateKeyStructure: DERParseable, Sendable {
    var privateKey: [UInt8]
    var curve: ASN1ObjectIdentifier?
    var publicKey: [UInt8]?

    init(derEncoded rootNode: ASN1Node) throws {
        (privateKey, curve, publicKey) = try DER.sequence(rootNode, identifier: .sequence) { nodes in
            let version = try Int(derEncoded: &nodes)
            guard version == 1 else { throw ASN1Error.invalidASN1Object(reason: "ECPrivateKey version \(version)") }
            let privateKey = try ASN1OctetString(derEncoded: &nodes)
            let curve = try DER.optionalExplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) {
                try ASN1ObjectIdentifier(derEncoded: $0)
            }
            let publicKey = try DER.optionalExplicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) {
                try ASN1BitString(derEncoded: $0)
            }
            if let publicKey, publicKey.paddingBits != 0 { throw ASN1Error.invalidASN1Object(reason: "EC public key is not whole bytes") }
            return (Array(privateKey.bytes), curve, publicKey.map { Array($0.bytes) })
        }
    }
}

/// PKCS#1 `RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }` (RFC 8017 A.1.1).
/// Integers are unsigned big-endian without leading zeros.
struct RSAPublicKeyStructure: DERImplicitlyTaggable, Sendable {
    static var defaultIdentifier: ASN1Identifier { .sequence }

    var modulus: ArraySlice<UInt8>
    var publicExponent: ArraySlice<UInt8>

    init(modulus: ArraySlice<UInt8>, publicExponent: ArraySlice<UInt8>) {
        self.modulus = modulus
        self.publicExponent = publicExponent
    }

    init(derEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try DER.sequence(rootNode, identifier: identifier) { nodes in
            RSAPublicKeyStructure(
                modulus: try ArraySlice<UInt8>(derEncoded: &nodes), publicExponent: try ArraySlice<UInt8>(derEncoded: &nodes))
        }
    }

    func serialize(into coder: inout DER.Serializer, withIdentifier identifier: ASN1Identifier) throws {
        try coder.appendConstructedNode(identifier: identifier) { coder in
            try coder.serialize(modulus)
            try coder.serialize(publicExponent)
        }
    }
}

/// PKCS#1 `RSAPrivateKey` (RFC 8017 A.1.2), two-prime form (version 0) only.
struct RSAPrivateKeyStructure: DERImplicitlyTaggable, Sendable {
    static var defaultIdentifier: ASN1Identifier { .sequence }

    var modulus, publicExponent, privateExponent, prime1, prime2, exponent1, exponent2, coefficient: ArraySlice<UInt8>

    init(
        modulus: ArraySlice<UInt8>, publicExponent: ArraySlice<UInt8>, privateExponent: ArraySlice<UInt8>,
        prime1: ArraySlice<UInt8>, prime2: ArraySlice<UInt8>, exponent1: ArraySlice<UInt8>,
        exponent2: ArraySlice<UInt8>, coefficient: ArraySlice<UInt8>
    ) {
        self.modulus = modulus
        self.publicExponent = publicExponent
        self.privateExponent = privateExponent
        self.prime1 = prime1
        self.prime2 = prime2
        self.exponent1 = exponent1
        self.exponent2 = exponent2
        self.coefficient = coefficient
    }

    init(derEncoded rootNode: ASN1Node, withIdentifier identifier: ASN1Identifier) throws {
        self = try DER.sequence(rootNode, identifier: identifier) { nodes in
            let version = try Int(derEncoded: &nodes)
            guard version == 0 else { throw ASN1Error.invalidASN1Object(reason: "multi-prime RSA keys are not supported") }
            return RSAPrivateKeyStructure(
                modulus: try ArraySlice(derEncoded: &nodes), publicExponent: try ArraySlice(derEncoded: &nodes),
                privateExponent: try ArraySlice(derEncoded: &nodes), prime1: try ArraySlice(derEncoded: &nodes),
                prime2: try ArraySlice(derEncoded: &nodes), exponent1: try ArraySlice(derEncoded: &nodes),
                exponent2: try ArraySlice(derEncoded: &nodes), coefficient: try ArraySlice(derEncoded: &nodes))
        }
    }

    func serialize(into coder: inout DER.Serializer, withIdentifier identifier: ASN1Identifier) throws {
        try coder.appendConstructedNode(identifier: identifier) { coder in
            try coder.serialize(0)
            for value in [modulus, publicExponent, privateExponent, prime1, prime2, exponent1, exponent2, coefficient] {
                try coder.serialize(value)
            }
        }
    }
}

extension DER {
    /// The DER bytes of `value`.
    static func encoded<T: DERSerializable>(_ value: T) -> [UInt8] {
        var serializer = DER.Serializer()
        // Serializing the in-memory structures above cannot fail: every field is already valid.
        try! serializer.serialize(value)
        return serializer.serializedBytes
    }

    /// Parses `bytes` as exactly one `T`, mapping swift-asn1's errors to `KeyError.malformedDER`.
    static func decode<T: DERParseable>(_ type: T.Type, from bytes: some Collection<UInt8>, what: String) throws(KeyError) -> T {
        do {
            return try T(derEncoded: Array(bytes))
        } catch {
            throw KeyError.malformedDER("\(what): \(ASN1ErrorText.clean(error))")
        }
    }
}
