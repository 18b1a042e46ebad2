import Foundation
import SFTestSupport
import SecureCore
import Testing

/// Issue 12 item 10: scrypt's work (N·r·p) is bounded as well as its memory, before any work.
@Suite struct KDFWorkTests {
    /// `SFE1 01 01 16 08 10` + 60 zero bytes: logN 22, r 8, p 16 (4 GiB, 2^29 work) was accepted.
    @Test func theSeventyByteHeaderIsRefusedBeforeAnyWork() throws {
        let crafted = Data("SFE1".utf8) + Data([0x01, 0x01, 0x16, 0x08, 0x10]) + Data(count: 60)
        #expect(crafted.count < 80)
        do {
            _ = try Envelope.open(crafted, passphrase: Data("x".utf8))
            Issue.record("opened")
        } catch {
            guard case .costAboveCeiling(let detail) = error else {
                Issue.record("expected costAboveCeiling, got \(error)")
                return
            }
            #expect(detail.contains("work"))
        }
    }

    @Test func workCeilingDefaultsToLargestNWithR8P1() throws {
        #expect(KDFLimits.default.maxScryptWork == 1 << 25)
        #expect(KDFLimits(maxScryptLogN: 24).maxScryptWork == 1 << 27)
        try PasswordKDF.scrypt(logN: 17, r: 8, p: 1).validate()
        try PasswordKDF.scrypt(logN: 22, r: 8, p: 1).validate()
        try PasswordKDF.scrypt(logN: 10, r: 8, p: 16).validate()
        for refused in [PasswordKDF.scrypt(logN: 22, r: 8, p: 2), .scrypt(logN: 20, r: 8, p: 16), .scrypt(logN: 21, r: 32, p: 1)] {
            expectError(where: { if case .costAboveCeiling = $0 { true } else { false } }, "\(refused)") { try refused.validate() }
        }
        let custom = KDFLimits(maxScryptWork: 1 << 14)
        expectError(where: { if case .costAboveCeiling = $0 { true } else { false } }) {
            try PasswordKDF.scrypt(logN: 12, r: 8, p: 1).validate(within: custom)
        }
        try PasswordKDF.scrypt(logN: 11, r: 8, p: 1).validate(within: custom)
        try PasswordKDF.scrypt(logN: 32, r: 8, p: 16).validate(within: .unlimited)
    }
}
