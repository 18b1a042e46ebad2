import AgeEncryption
import Foundation
import SecureCore
import Testing

/// Every byte flipped and every truncation of a small file yields a specific error and no
/// unauthenticated plaintext.
@Suite struct TamperTests {
    static let identity = Age.X25519Identity()
    /// Two chunks, so header, first chunk, and final chunk are all covered.
    static let plaintext = SecureRandom.bytes(count: 64 * 1024 + 100)
    static let file = try! Age.encrypt(plaintext, to: [identity.recipient])
    static let headerLength = file.firstRange(of: Data("\n---".utf8))!.upperBound

    /// Decrypts as a streaming caller would, returning what was released and the error.
    static func attempt(_ bytes: Data) -> (Data, AgeError?) {
        let sink = Age.DataSink()
        do {
            try Age.Decryptor(from: Age.DataSource(bytes), identities: [identity], encoding: .binary).decrypt(to: sink)
            return (sink.data, nil)
        } catch {
            return (sink.data, error as? AgeError)
        }
    }

    @Test func everyByteFlipped() {
        // Flipping every byte of a 64 KiB chunk is slow in debug builds; sample the chunk bodies.
        let positions = Array(0..<(Self.headerLength + 200)) + Array(stride(from: Self.headerLength + 200, to: Self.file.count, by: 997))
            + Array(Self.file.count - 40..<Self.file.count)
        for position in Set(positions).sorted() {
            var tampered = Self.file
            tampered[position] ^= 0x01
            let (released, error) = Self.attempt(tampered)
            #expect(error != nil, "flip at \(position) was not detected")
            // Only the first, intact chunk may have been released before the failure.
            #expect(released.isEmpty || released == Self.plaintext.prefix(64 * 1024), "flip at \(position)")
            guard let error else { continue }
            if position >= Self.headerLength + 16 + 64 * 1024 + 16 + 44 {
                #expect(error == .payloadAuthenticationFailed(chunk: 1), "flip at \(position): \(error)")
            } else if position >= Self.headerLength + 44 + 16 {
                #expect(error == .payloadAuthenticationFailed(chunk: 0), "flip at \(position): \(error)")
            }
        }
    }

    @Test func everyTruncation() {
        let payloadStart = Self.headerLength + 44 + 1 + 16
        let boundaries = Array(0..<payloadStart + 20) + [payloadStart + 64 * 1024 + 16 - 1, payloadStart + 64 * 1024 + 16]
            + Array(Self.file.count - 20..<Self.file.count)
        for length in boundaries {
            let (released, error) = Self.attempt(Self.file.prefix(length))
            #expect(error != nil, "truncation to \(length) bytes was not detected")
            #expect(released.isEmpty || released == Self.plaintext.prefix(64 * 1024))
            if length == payloadStart + 64 * 1024 + 16 { #expect(error == .truncated) }
            if length < Self.headerLength { #expect(error.map { if case .malformedHeader = $0 { true } else { false } } == true) }
        }
    }

    @Test func trailingData() throws {
        // After a full-length final chunk, extra bytes are trailing data; the final chunk authenticated.
        let exact = SecureRandom.bytes(count: 2 * 64 * 1024)
        let file = try Age.encrypt(exact, to: [Self.identity.recipient])
        for extra in [Data([0]), Data(count: 17), Data(count: 64 * 1024 + 16)] {
            let (released, error) = Self.attempt(file + extra)
            #expect(error == .trailingData)
            #expect(released == exact)
        }
        // After a short final chunk, extra bytes are read with it and it fails to authenticate
        // (the same rule as SFS1, and as age); the chunks before it were released.
        let (released, error) = Self.attempt(Self.file + Data([0]))
        #expect(error == .payloadAuthenticationFailed(chunk: 1))
        #expect(released == Self.plaintext.prefix(64 * 1024))
    }

    @Test func wrongKeyAndHeaderMAC() throws {
        #expect(throws: AgeError.noIdentityMatched) {
            try Age.decrypt(Self.file, identities: [Age.X25519Identity()])
        }
        // Changing the header (a stanza argument) after the fact breaks the MAC for the right key.
        var text = Self.file
        let macStart = Self.headerLength + 1
        text.replaceSubrange(macStart..<macStart + 43, with: Data(String(repeating: "A", count: 42).utf8) + Data("A".utf8))
        #expect(throws: AgeError.headerMACMismatch) { try Age.decrypt(text, identities: [Self.identity]) }
    }

    @Test func armorIsStrict() throws {
        let armored = try Age.encrypt(Data("x".utf8), to: [Self.identity.recipient], armored: true)
        let text = String(decoding: armored, as: UTF8.self)
        #expect(try Age.decrypt(Data(("\n \t" + text + "\n\n").utf8), identities: [Self.identity]) == Data("x".utf8))
        for bad in [text.replacingOccurrences(of: "FILE-----\n", with: "FILE-----\n\n"), "junk\n" + text, text + "junk",
                    text.lowercased(), text.replacingOccurrences(of: "\n", with: " \n")] {
            #expect(throws: AgeError.self) { try Age.decrypt(Data(bad.utf8), identities: [Self.identity], encoding: .armored) }
        }
        // At most 1 KiB of whitespace before the block and after it (FORMATS.md), armored or detected.
        let most = String(repeating: " ", count: 1024)
        for encoding in [Age.Encoding.armored, .detect] {
            #expect(try Age.decrypt(Data((most + text + most).utf8), identities: [Self.identity], encoding: encoding) == Data("x".utf8))
            for bad in [" " + most + text, text + most + " "] {
                #expect(throws: AgeError.self, "\(encoding)") { try Age.decrypt(Data(bad.utf8), identities: [Self.identity], encoding: encoding) }
            }
        }
    }
}
