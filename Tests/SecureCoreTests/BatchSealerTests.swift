import Crypto
import Foundation
import Testing

@testable import SecureCore

/// `Envelope.BatchSealer` makes exactly the envelopes `Envelope.seal` makes.
@Suite struct BatchSealerTests {
    @Test(arguments: Envelope.Algorithm.allCases)
    func envelopesOpenWithTheOrdinaryOpenAndNoncesAreFresh(algorithm: Envelope.Algorithm) throws {
        let key = SecretBytes.random(count: 32)
        // A block of 3 nonces, so the sealer refills several times.
        var sealer = try Envelope.BatchSealer(key: key, algorithm: algorithm, expectedCount: 3)
        var nonces = Set<Data>()
        for i in 0..<10 {
            let context = Data("field \(i)".utf8)
            let plaintext = Data(repeating: UInt8(i), count: i * 7)
            let sealed = try sealer.seal(plaintext, context: context)
            let header = try Envelope.header(of: sealed)
            #expect(header.algorithm == algorithm && header.kdf == nil)
            #expect(sealed.count == 6 + 12 + plaintext.count + 16)
            #expect(try Envelope.open(sealed, key: key, context: context) == plaintext)
            #expect(throws: SecureCoreError.authenticationFailed) { try Envelope.open(sealed, key: key, context: context + [0]) }
            #expect(throws: SecureCoreError.authenticationFailed) {
                try Envelope.open(sealed, key: SecretBytes.random(count: 32), context: context)
            }
            nonces.insert(sealed[6..<18])
        }
        #expect(nonces.count == 10)
    }

    /// The buffer form makes what the generic form makes, with an empty context too; input in
    /// several regions (not contiguous) seals alike.
    @Test(arguments: Envelope.Algorithm.allCases)
    func bufferFormAndScatteredInputOpenWithTheOrdinaryOpen(algorithm: Envelope.Algorithm) throws {
        let key = SecretBytes.random(count: 32)
        var sealer = try Envelope.BatchSealer(key: key, algorithm: algorithm)
        for context in [Data(), Data("field".utf8)] {
            for plaintext in [Data(), Data("a value".utf8)] {
                let sealed = try plaintext.withUnsafeBytes { p in try context.withUnsafeBytes { c in try sealer.seal(p, context: c) } }
                #expect(sealed.count == 6 + 12 + plaintext.count + 16)
                #expect(try Envelope.open(sealed, key: key, context: context) == plaintext)
                #expect(throws: SecureCoreError.authenticationFailed) { try Envelope.open(sealed, key: key, context: context + [0]) }
            }
        }
        var scattered = DispatchData.empty
        for part in ["sca", "ttered"] { Data(part.utf8).withUnsafeBytes { scattered.append($0) } }
        #expect(scattered.regions.count == 2)
        let sealed = try sealer.seal(scattered, context: scattered)
        #expect(try Envelope.open(sealed, key: key, context: Data("scattered".utf8)) == Data("scattered".utf8))
    }

    @Test func noncesOtherThan12BytesAreRefused() {
        for count in [11, 13, 16] {
            #expect(throws: SecureCoreError.invalidParameter("the nonce must be 12 bytes")) {
                try [UInt8](repeating: 0, count: count).withUnsafeBytes { nonce in
                    _ = try AEAD.seal(.aes256GCM, Data(), key: SymmetricKey(size: .bits256), nonce: nonce, authenticating: Data())
                }
            }
        }
    }

    @Test func keysOtherThan32BytesAreRefused() {
        #expect(throws: SecureCoreError.self) { _ = try Envelope.BatchSealer(key: SecretBytes.random(count: 16)) }
    }
}
