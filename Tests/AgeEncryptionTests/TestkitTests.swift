import AgeEncryption
import Crypto
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// Every vector of the CCTV age testkit, each with its specific outcome class and payload hash.
@Suite struct TestkitTests {
    // Published vectors: skipped when Tests/Vectors is absent, a failure under CI.
    @Test(.requiresVectors)
    func vectorsArePresent() {
        #expect(TestkitVector.names.count >= 143, "age testkit missing: \(TestSupport.vectorsMissingReason)")
    }

    // Published vectors: skipped when Tests/Vectors is absent (there are then no arguments).
    @Test(.requiresVectors, arguments: TestkitVector.names)
    func vector(_ name: String) throws {
        let vector = try TestkitVector.load(name)
        var identities: [any Age.Identity] = try vector.identities.map { text -> any Age.Identity in
            if text.hasPrefix("AGE-SECRET-KEY-PQ-"), #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) {
                return try Age.HybridIdentity(text)
            }
            return try Age.X25519Identity(text)
        }
        identities += vector.passphrases.map { Age.ScryptIdentity(passphrase: SecretBytes(Data($0.utf8))) }

        let sink = Age.DataSink()
        var outcome: TestkitVector.Expectation = .success
        var failure: AgeError?
        do {
            let decryptor = try Age.Decryptor(
                from: Age.DataSource(vector.file), identities: identities, encoding: vector.armored ? .armored : .binary)
            do {
                try decryptor.decrypt(to: sink)
            } catch let error as AgeError {
                failure = error
                outcome = error.isArmorError ? .armorFailure : .payloadFailure
            }
        } catch let error as AgeError {
            failure = error
            outcome = error.testkitClass
        }
        #expect(outcome == vector.expect, "\(name): got \(String(describing: failure))")
        if let expected = vector.payloadSHA256 {
            #expect(Hex.encode(Data(SHA256.hash(data: sink.data))) == expected, "\(name): released plaintext hash")
        } else {
            #expect(sink.data.isEmpty || vector.expect == .success)
        }
    }
}

extension AgeError {
    var isArmorError: Bool { if case .armor = self { true } else { false } }

    /// The testkit outcome class of an error raised while reading the header.
    var testkitClass: TestkitVector.Expectation {
        switch self {
        case .armor: .armorFailure
        case .noIdentityMatched: .noMatch
        case .headerMACMismatch: .hmacFailure
        case .malformedHeader, .unsupportedVersion, .workFactorAboveCeiling: .headerFailure
        default: .payloadFailure
        }
    }
}
