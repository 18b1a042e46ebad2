import Crypto
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// The library rules `sf` relies on: key files, envelope armor, and telling sealed encodings apart.
struct KeyFileAndArmorTests {
    let key = Data((0..<32).map { UInt8($0 * 7 + 1) })

    @Test func keyFilesHoldRawBytesOrHexWithWhitespaceAround() throws {
        let hex = Hex.encode(key)
        for contents in [
            key, Data(hex.utf8), Data(hex.uppercased().utf8), Data((hex + "\n").utf8), Data(("  \t" + hex + "\r\n").utf8),
            Data(("\u{00A0}" + hex + "\u{2028}").utf8),  // TRIM removes Unicode white space too
        ] {
            #expect(try SymmetricKeyFile.key(from: contents).withUnsafeBytes { Data($0) } == key)
        }
    }

    @Test func anythingElseIsATypedErrorNamingTheFileNotItsContents() throws {
        let hex = Hex.encode(key)
        for contents in [
            Data(), key.prefix(31), key + Data([0]), Data(hex.dropLast().utf8), Data((hex + "0").utf8),
            Data((String(hex.dropLast()) + "g").utf8), Data((String(hex.prefix(32)) + " " + String(hex.suffix(32))).utf8),
        ] {
            #expect {
                _ = try SymmetricKeyFile.key(from: contents, name: "app.key")
            } throws: { error in
                guard case .malformedEncoding(let message) = error as? SecureCoreError else { return false }
                return message.hasPrefix("app.key: ") && !message.contains(String(hex.prefix(8)))
            }
        }
    }

    @Test func aSecretFileIsItsFirstLineWithoutItsLineEnding() throws {
        let dir = try TestSupport.temporaryDirectory("secret-file")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("secret").path
        for contents in ["hunter2", "hunter2\n", "hunter2\r\n", "hunter2\nsecond line\n", "hunter2\r\n\r\n# comment"] {
            try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
            #expect(try SecretFile.read(path: path) == SecretBytes(Data("hunter2".utf8)), "\(contents.debugDescription)")
        }
        // Inner spaces, a lone CR inside the line and a trailing space are part of the secret.
        try Data(" a b\rc \n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try SecretFile.read(path: path) == SecretBytes(Data(" a b\rc ".utf8)))
        let longest = String(repeating: "x", count: SecretFile.maximumLineLength)
        try Data((longest + "\n").utf8).write(to: URL(fileURLWithPath: path))
        #expect(try SecretFile.read(path: path).count == SecretFile.maximumLineLength)
        // The longest line ended by CR LF is read whole; a longer line whose first bytes past the
        // longest are a CR and more is refused, not cut at the CR.
        try Data((longest + "\r\n").utf8).write(to: URL(fileURLWithPath: path))
        #expect(try SecretFile.read(path: path).count == SecretFile.maximumLineLength)
        for refused in ["", "\n", "\r\n", longest + "x", longest + "\rYYYY\n", longest + "\rY"] {
            try Data(refused.utf8).write(to: URL(fileURLWithPath: path))
            #expect {
                _ = try SecretFile.read(path: path)
            } throws: { error in
                guard case .invalidParameter(let message) = error as? SecureCoreError else { return false }
                return message.hasPrefix(path + ": ")
            }
        }
        #expect {
            _ = try SecretFile.read(path: dir.appendingPathComponent("missing").path)
        } throws: { error in
            guard case .io = error as? SecureCoreError else { return false }
            return true
        }
    }

    @Test func keyFilesAreReadFromDiskAndOversizedOnesRefused() throws {
        let dir = try TestSupport.temporaryDirectory("key-file")
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = dir.appendingPathComponent("good.key").path
        try Data((Hex.encode(key) + "\n").utf8).write(to: URL(fileURLWithPath: good))
        #expect(try SymmetricKeyFile.read(path: good).withUnsafeBytes { Data($0) } == key)
        let padded = dir.appendingPathComponent("padded.key").path
        try Data((String(repeating: " ", count: 5000) + Hex.encode(key)).utf8).write(to: URL(fileURLWithPath: padded))
        expectError(.malformedEncoding("\(padded): a key file holds 32 raw bytes or 64 hex digits")) {
            _ = try SymmetricKeyFile.read(path: padded)
        }
        let missing = dir.appendingPathComponent("missing").path
        expectError(.io(path: missing, reason: String(cString: strerror(ENOENT)))) { _ = try SymmetricKeyFile.read(path: missing) }
    }

    @Test func armoredEnvelopesRoundTripAndOtherPEMIsRefused() throws {
        let sealed = try Envelope.seal(Data("hello".utf8), key: SymmetricKey(data: key))
        let text = Envelope.armor(sealed)
        #expect(text.hasPrefix("-----BEGIN SECUREFOUNDATION ENVELOPE-----\n"))
        #expect(try Envelope.dearmor(text) == sealed)
        #expect(try Envelope.open(try Envelope.dearmor(text), key: SymmetricKey(data: key)) == Data("hello".utf8))
        expectError(.malformedEncoding("PEM: expected label SECUREFOUNDATION ENVELOPE, found PRIVATE KEY")) {
            _ = try Envelope.dearmor(PEM.encode(sealed, label: "PRIVATE KEY"))
        }
        expectError(where: { if case .malformedEncoding = $0 { true } else { false } }) {
            _ = try Envelope.dearmor(String(text.dropLast(10)))
        }
    }

    @Test func sealedEncodingsAreDetectedByTheirSignature() throws {
        let symmetric = SymmetricKey(data: key)
        let envelope = try Envelope.seal(Data("x".utf8), key: symmetric)
        #expect(SealedDataEncoding.detect(envelope) == .envelope)
        #expect(SealedDataEncoding.detect(Data(Envelope.armor(envelope).utf8)) == .armoredEnvelope)
        let stream = try StreamEnvelopeTests().encrypt(Data("x".utf8))
        #expect(SealedDataEncoding.detect(stream) == .stream)
        for other in [Data(), Data("SFE".utf8), Data("-----BEGI".utf8), Data("age-encryption.org/v1\n".utf8), Data([0x53, 0x46, 0x45, 0x32])] {
            #expect(SealedDataEncoding.detect(other) == nil)
        }
    }
}
