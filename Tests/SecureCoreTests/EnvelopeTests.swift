import Crypto
import Foundation
import Testing

@testable import SecureCore

/// Fast KDF settings so round trips over every combination stay quick; the format is the same.
let testKDFs: [PasswordKDF?] = [nil, .scrypt(logN: 10, r: 8, p: 1), .pbkdf2(hash: .sha256, rounds: 1000)]
let passphrase = Data("correct horse battery staple".utf8)

func sealForTest(_ plaintext: Data, key: SymmetricKey, kdf: PasswordKDF?, algorithm: Envelope.Algorithm, context: Data) throws -> Data {
    if let kdf {
        return try Envelope.seal(plaintext, passphrase: passphrase, kdf: kdf, algorithm: algorithm, context: context)
    }
    return try Envelope.seal(plaintext, key: key, algorithm: algorithm, context: context)
}

func openForTest(_ envelope: Data, key: SymmetricKey, kdf: PasswordKDF?, context: Data) throws -> Data {
    if kdf != nil { return try Envelope.open(envelope, passphrase: passphrase, context: context) }
    return try Envelope.open(envelope, key: key, context: context)
}

func expectError(_ expected: SecureCoreError, _ comment: Comment? = nil, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(expected), got success. \(comment?.rawValue ?? "")")
    } catch let error as SecureCoreError {
        #expect(error == expected, comment)
    } catch {
        Issue.record("expected \(expected), got \(error). \(comment?.rawValue ?? "")")
    }
}

/// Expects `body` to throw a `SecureCoreError` that `matches` accepts (for cases whose payload is
/// a sentence, so a test names the case without pinning the wording).
func expectError(where matches: (SecureCoreError) -> Bool, _ comment: Comment? = nil, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected an error, got success. \(comment?.rawValue ?? "")")
    } catch let error as SecureCoreError {
        #expect(matches(error), "unexpected \(error). \(comment?.rawValue ?? "")")
    } catch {
        Issue.record("not a SecureCoreError: \(error). \(comment?.rawValue ?? "")")
    }
}

@Suite struct EnvelopeTests {
    let key = SymmetricKey(size: .bits256)

    @Test(arguments: Envelope.Algorithm.allCases, testKDFs)
    func roundTrip(algorithm: Envelope.Algorithm, kdf: PasswordKDF?) throws {
        for size in [0, 1, 15, 16, 17, 1000, 70_000] {
            let plaintext = SecureRandom.bytes(count: size)
            let context = Data("ctx".utf8)
            let sealed = try sealForTest(plaintext, key: key, kdf: kdf, algorithm: algorithm, context: context)
            #expect(try openForTest(sealed, key: key, kdf: kdf, context: context) == plaintext)
            let header = try Envelope.header(of: sealed)
            #expect(header.algorithm == algorithm)
            #expect(header.kdf == kdf)
        }
    }

    @Test func headerLayoutMatchesFormatDocument() throws {
        let raw = try Envelope.seal(Data("x".utf8), key: key)
        #expect(Array(raw.prefix(6)) == [0x53, 0x46, 0x45, 0x31, 0x01, 0x00])
        #expect(raw.count == 6 + 12 + 1 + 16)
        let scrypt = try Envelope.seal(Data(), passphrase: passphrase, kdf: .scrypt(logN: 10, r: 8, p: 1))
        #expect(Array(scrypt.prefix(9)) == [0x53, 0x46, 0x45, 0x31, 0x01, 0x01, 10, 8, 1])
        #expect(scrypt.count == 9 + 16 + 12 + 16)
        let pbkdf2 = try Envelope.seal(Data(), passphrase: passphrase, kdf: .pbkdf2(hash: .sha256, rounds: 1000),
                                       algorithm: .chaCha20Poly1305)
        #expect(Array(pbkdf2.prefix(10)) == [0x53, 0x46, 0x45, 0x31, 0x02, 0x02, 0, 0, 0x03, 0xe8])
    }

    @Test func freshNoncePerMessage() throws {
        let a = try Envelope.seal(Data("same".utf8), key: key)
        let b = try Envelope.seal(Data("same".utf8), key: key)
        #expect(a != b)
        #expect(a[6..<18] != b[6..<18])
    }

    /// The error every flipped byte must produce, by the field it lands in.
    static func expectedErrorForFlip(at index: Int, in sealed: Data, kdf: PasswordKDF?) -> SecureCoreError {
        switch index {
        case 0..<4: return .unrecognizedFormat(expected: "SFE1")
        case 4: return .unsupportedAlgorithm(sealed[4] ^ 0xff)
        case 5: return .unsupportedKDF(sealed[5] ^ 0xff)
        default: break
        }
        switch kdf {
        case .scrypt?:
            if index == 6 { return .costAboveCeiling("scrypt logN \(sealed[6] ^ 0xff) above ceiling 22") }
            if index == 7 || index == 8 {
                var r = UInt32(sealed[7]), p = UInt32(sealed[8])
                if index == 7 { r ^= 0xff } else { p ^= 0xff }
                return .costAboveCeiling("scrypt r=\(r) p=\(p) above ceiling r≤32 p≤16")
            }
        case .pbkdf2?:
            if (6..<10).contains(index) {
                var field = Array(sealed[6..<10])
                field[index - 6] ^= 0xff
                let rounds = field.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                if rounds > 10_000_000 { return .costAboveCeiling("PBKDF2 rounds \(rounds) above ceiling 10000000") }
            }
        case nil:
            break
        }
        return .authenticationFailed
    }

    @Test(arguments: testKDFs)
    func everyByteFlipIsRejected(kdf: PasswordKDF?) throws {
        let sealed = try sealForTest(Data("attack at dawn".utf8), key: key, kdf: kdf, algorithm: .aes256GCM, context: Data())
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0xff
            let expected = Self.expectedErrorForFlip(at: index, in: sealed, kdf: kdf)
            expectError(expected, "flip at \(index)") { _ = try openForTest(tampered, key: key, kdf: kdf, context: Data()) }
        }
    }

    /// swift-crypto's memory bound for BoringSSL's scrypt is too small for r above 16 with p = 1
    /// (such a derivation failed as `outOfMemory` at a few MiB): those costs are refused before any
    /// work with `invalidParameter`; every other r up to the default ceiling (32) seals and opens.
    @Test func scryptBlockSizesSwiftCryptoCanDerive() throws {
        for (r, p): (UInt32, UInt32) in [(16, 1), (17, 2), (32, 2), (32, 3)] {
            let sealed = try Envelope.seal(Data("r \(r)".utf8), passphrase: passphrase, kdf: .scrypt(logN: 10, r: r, p: p))
            #expect(try Envelope.open(sealed, passphrase: passphrase) == Data("r \(r)".utf8), "r \(r) p \(p)")
        }
        for (logN, r, p): (UInt8, UInt32, UInt32) in [(10, 17, 1), (10, 32, 1), (1, 33, 2), (16, 1, 1), (20, 1, 1), (33, 8, 1)] {
            #expect("\(logN) \(r) \(p)") {
                try PasswordKDF.scrypt(logN: logN, r: r, p: p).validate(within: .unlimited)
            } throws: { error in
                guard case .invalidParameter(let message) = error as? SecureCoreError else { return false }
                return message.hasPrefix("scrypt with ") && message.contains("is not supported")
            }
        }
        // logN 15 with r 1 is the largest N BoringSSL takes for r 1 (N < 2^16).
        let small = try Envelope.seal(Data("n".utf8), passphrase: passphrase, kdf: .scrypt(logN: 15, r: 1, p: 1))
        #expect(try Envelope.open(small, passphrase: passphrase) == Data("n".utf8))
    }

    /// Every single-bit change of a passphrase envelope's header (zero costs included, which a
    /// flip of every bit never makes) is refused with an error SECURITY.md lists, and nothing opens.
    @Test func everyHeaderBitFlipGivesADocumentedError() throws {
        let sealed = try Envelope.seal(Data("attack at dawn".utf8), passphrase: passphrase, kdf: .scrypt(logN: 10, r: 8, p: 1))
        let headerLength = try Envelope.header(of: sealed).encoded.count
        for index in 0..<headerLength {
            for bit in 0..<8 {
                var tampered = sealed
                tampered[index] ^= 1 << bit
                do {
                    _ = try Envelope.open(tampered, passphrase: passphrase)
                    Issue.record("byte \(index) bit \(bit): opened")
                } catch {
                    switch error {
                    case .authenticationFailed, .unrecognizedFormat, .unsupportedAlgorithm, .unsupportedKDF, .costAboveCeiling,
                        .secretKindMismatch, .truncated, .invalidParameter:
                        break
                    default:
                        Issue.record("byte \(index) bit \(bit): \(error)")
                    }
                }
            }
        }
    }

    @Test(arguments: testKDFs)
    func everyTruncationIsRejected(kdf: PasswordKDF?) throws {
        let sealed = try sealForTest(Data("attack at dawn".utf8), key: key, kdf: kdf, algorithm: .chaCha20Poly1305, context: Data())
        let headerLength = try Envelope.header(of: sealed).encoded.count
        let minimum = headerLength + 12 + 16
        for length in 0..<sealed.count {
            // Below the minimum the structure is incomplete; above it, a shorter body fails its tag.
            let expected: SecureCoreError = length < minimum ? .truncated : .authenticationFailed
            expectError(expected, "length \(length)") { _ = try openForTest(sealed.prefix(length), key: key, kdf: kdf, context: Data()) }
        }
    }

    @Test func wrongKeyContextOrPassphraseIsRejected() throws {
        let sealed = try Envelope.seal(Data("secret".utf8), key: key, context: Data("a".utf8))
        expectError(.authenticationFailed) { _ = try Envelope.open(sealed, key: SymmetricKey(size: .bits256), context: Data("a".utf8)) }
        expectError(.authenticationFailed) { _ = try Envelope.open(sealed, key: key, context: Data("b".utf8)) }
        expectError(.authenticationFailed) { _ = try Envelope.open(sealed, key: key) }
        let byPassphrase = try Envelope.seal(Data("secret".utf8), passphrase: passphrase, kdf: .scrypt(logN: 10, r: 8, p: 1))
        expectError(.authenticationFailed) { _ = try Envelope.open(byPassphrase, passphrase: Data("wrong".utf8)) }
    }

    @Test func wrongKeyKindAndSizeAreRejected() throws {
        let sealed = try Envelope.seal(Data("secret".utf8), key: key)
        expectError(.secretKindMismatch(sealedWith: .rawKey)) { _ = try Envelope.open(sealed, passphrase: passphrase) }
        let byPassphrase = try Envelope.seal(Data("secret".utf8), passphrase: passphrase, kdf: .scrypt(logN: 10, r: 8, p: 1))
        expectError(.secretKindMismatch(sealedWith: .passphrase)) { _ = try Envelope.open(byPassphrase, key: key) }
        expectError(.invalidParameter("key must be 32 bytes")) { _ = try Envelope.seal(Data(), key: SymmetricKey(size: .bits128)) }
        expectError(.invalidParameter("key must be 32 bytes")) { _ = try Envelope.open(sealed, key: SymmetricKey(size: .bits128)) }
    }

    /// A crafted header asking for scrypt logN 30 (16 GiB, hours) must fail at once, before any KDF work.
    @Test func costAboveCeilingIsRejectedBeforeWork() throws {
        var sealed = try Envelope.seal(Data("x".utf8), passphrase: passphrase, kdf: .scrypt(logN: 10, r: 8, p: 1))
        sealed[6] = 30
        let started = ContinuousClock.now
        expectError(.costAboveCeiling("scrypt logN 30 above ceiling 22")) { _ = try Envelope.open(sealed, passphrase: passphrase) }
        // Deriving at logN 30 would take hours; the rejection must not even start it (a bound far
        // above an instant refusal on a loaded machine, far below the work).
        #expect(ContinuousClock.now - started < .seconds(60))

        var pbkdf2 = try Envelope.seal(Data("x".utf8), passphrase: passphrase, kdf: .pbkdf2(hash: .sha256, rounds: 1000))
        pbkdf2.replaceSubrange(6..<10, with: [0xff, 0xff, 0xff, 0xff])
        expectError(.costAboveCeiling("PBKDF2 rounds 4294967295 above ceiling 10000000")) {
            _ = try Envelope.open(pbkdf2, passphrase: passphrase)
        }
        // Writers apply the readers' ceiling: nothing is sealed that a default reader refuses, and
        // the refusal comes before any work (issue 21: 4,294,967,295 rounds ran 25 minutes).
        let writeStarted = ContinuousClock.now
        expectError(.costAboveCeiling("PBKDF2 rounds 4294967295 above ceiling 10000000")) {
            _ = try Envelope.seal(Data("x".utf8), passphrase: passphrase, kdf: .pbkdf2(hash: .sha256, rounds: .max))
        }
        expectError(.costAboveCeiling("scrypt logN 23 above ceiling 22")) {
            _ = try Envelope.seal(Data("x".utf8), passphrase: passphrase, kdf: .scrypt(logN: 23, r: 8, p: 1))
        }
        #expect(ContinuousClock.now - writeStarted < .seconds(60))
        // A caller may lower the ceiling below what the data needs.
        let strict = KDFLimits(maxScryptLogN: 9)
        let small = try Envelope.seal(Data("x".utf8), passphrase: passphrase, kdf: .scrypt(logN: 10, r: 8, p: 1))
        expectError(.costAboveCeiling("scrypt logN 10 above ceiling 9")) { _ = try Envelope.open(small, passphrase: passphrase, limits: strict) }
    }

    @Test func propertyListAndCodableValues() throws {
        let plist: [String: Any] = ["name": "Ada", "age": 36, "tags": ["a", "b"], "blob": Data([1, 2, 3])]
        let sealed = try Envelope.seal(propertyList: plist, key: key)
        let opened = try #require(try Envelope.openPropertyList(sealed, key: key) as? [String: Any])
        #expect(opened["name"] as? String == "Ada")
        #expect((opened["tags"] as? [Any])?.count == 2)
        #expect(opened["blob"] as? Data == Data([1, 2, 3]))

        struct Record: Codable, Equatable { var to: String; var amount: Int }
        let record = Record(to: "Bob", amount: 7)
        let sealedRecord = try Envelope.seal(encodable: record, passphrase: passphrase, kdf: .scrypt(logN: 10, r: 8, p: 1))
        #expect(try Envelope.open(Record.self, from: sealedRecord, passphrase: passphrase) == record)
        expectError(.authenticationFailed) { _ = try Envelope.open(Record.self, from: sealedRecord, passphrase: Data("no".utf8)) }
    }

    @Test func itemSealerBindsContext() throws {
        let sealer = try KeyItemSealer(key: .random(count: 32))
        let sealed = try sealer.seal(Data("v".utf8), context: Data("service/account".utf8))
        #expect(try sealer.open(sealed, context: Data("service/account".utf8)) == Data("v".utf8))
        expectError(.authenticationFailed) { _ = try sealer.open(sealed, context: Data("service/other".utf8)) }
    }
}

@Suite struct PassphraseItemSealerTests {
    @Test func sealsPerValueAndRefusesWrongPassphraseOrContext() throws {
        let kdf = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)
        let sealer = try PassphraseItemSealer(passphrase: SecretBytes(Data("pw".utf8)), kdf: kdf)
        let a = try sealer.seal(Data("v".utf8), context: Data("c".utf8))
        let b = try sealer.seal(Data("v".utf8), context: Data("c".utf8))
        #expect(a != b)  // fresh salt and nonce per value
        #expect(try sealer.open(a, context: Data("c".utf8)) == Data("v".utf8))
        expectError(.authenticationFailed) { _ = try sealer.open(a, context: Data("d".utf8)) }
        let other = try PassphraseItemSealer(passphrase: SecretBytes(Data("other".utf8)), kdf: kdf)
        expectError(.authenticationFailed) { _ = try other.open(a, context: Data("c".utf8)) }
        #expect(throws: SecureCoreError.self) { try PassphraseItemSealer(passphrase: SecretBytes(Data())) }
        #expect(throws: SecureCoreError.self) { try PassphraseItemSealer(passphrase: SecretBytes(Data("pw".utf8)), kdf: .scrypt(logN: 30, r: 8, p: 1)) }
    }
}
