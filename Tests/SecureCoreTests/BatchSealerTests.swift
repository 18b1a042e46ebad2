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

    @Test func keysOtherThan32BytesAreRefused() {
        #expect(throws: SecureCoreError.self) { _ = try Envelope.BatchSealer(key: SecretBytes.random(count: 16)) }
    }
}
