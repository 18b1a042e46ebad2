import ArgumentParser
import Foundation
import SecureFoundation

/// A guided end-to-end run of what SecureFoundation does, in a throw-away home directory. Every step
/// checks its own result, so the tour doubles as a smoke test: it exits 1 if any step misbehaves.
struct TourCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tour", abstract: "A guided, self-checking run through every feature, in a temporary home.")

    @Flag(help: "Keep the temporary home directory and print its path.") var keep = false

    func run() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("sf-tour-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        setenv("SF_HOME", home.path, 1)
        defer { if !keep { try? FileManager.default.removeItem(at: home) } }
        let tour = Tour(home: home)
        try tour.core()
        print("\nTour complete: \(tour.steps) steps, all checks passed.\(keep ? " Home: \(home.path)" : "")")
    }
}

/// The tour's steps; each prints what it does and verifies the outcome.
final class Tour {
    let home: URL
    private(set) var steps = 0

    init(home: URL) { self.home = home }

    func step(_ title: String, _ body: () throws -> String) throws {
        steps += 1
        let detail = try body()
        print("[\(steps)] \(title)\n    \(detail)")
    }

    func check(_ condition: Bool, _ message: String) throws {
        guard condition else { throw CLIError("tour check failed: \(message)") }
    }

    func expectFailure(_ expected: SecureCoreError, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as SecureCoreError where error == expected {
            return
        }
        throw CLIError("tour check failed: expected \(expected)")
    }

    func core() throws {
        print("SecureCore: the iMAS cipher utilities, fixed.\n")
        try step("Random bytes of any length, and unbiased random strings") {
            let bytes = SecureRandom.bytes(count: 7)
            let password = SecureRandom.string(length: 24)
            try check(bytes.count == 7 && password.count == 24, "random lengths")
            return "7 bytes: \(Hex.encode(bytes)); a 24-character password drawn from 62 characters"
        }
        try step("SHA-256 of 'abc' (SHA-1 and MD5 only under HashFunction.Insecure)") {
            let digest = Hex.encode(Hashing.hash(Data("abc".utf8)))
            try check(digest == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256 KAT")
            return digest
        }
        let passphrase = Data("tour passphrase".utf8)
        var sealed = Data()
        try step("Seal a message under a passphrase (scrypt logN 17 + AES-256-GCM, header authenticated)") {
            let started = ContinuousClock.now
            sealed = try Envelope.seal(Data("meet at noon".utf8), passphrase: passphrase, context: Data("tour".utf8))
            let opened = try Envelope.open(sealed, passphrase: passphrase, context: Data("tour".utf8))
            try check(opened == Data("meet at noon".utf8), "envelope round trip")
            let elapsed = ContinuousClock.now - started
            return "\(sealed.count) bytes, sealed and opened in \(elapsed.components.seconds)."
                + String(format: "%02d s", Int(elapsed.components.attoseconds / 10_000_000_000_000_000))
        }
        try step("A wrong passphrase, a wrong context and a flipped byte are all rejected") {
            try expectFailure(.authenticationFailed) { _ = try Envelope.open(sealed, passphrase: Data("guess".utf8), context: Data("tour".utf8)) }
            try expectFailure(.authenticationFailed) { _ = try Envelope.open(sealed, passphrase: passphrase, context: Data("other".utf8)) }
            var tampered = sealed
            tampered[tampered.count - 1] ^= 1
            try expectFailure(.authenticationFailed) { _ = try Envelope.open(tampered, passphrase: passphrase, context: Data("tour".utf8)) }
            return "authentication failed, three times, as it should"
        }
        try step("A crafted header demanding scrypt logN 30 is refused before any work") {
            var crafted = sealed
            crafted[6] = 30
            try expectFailure(.costAboveCeiling("scrypt logN 30 above ceiling 22")) {
                _ = try Envelope.open(crafted, passphrase: passphrase, context: Data("tour".utf8))
            }
            return "cost above ceiling: scrypt logN 30 above ceiling 22"
        }
        try step("Encrypt a 5 MiB file to a file in 64 KiB chunks, atomically; decrypt it back") {
            let plain = home.appendingPathComponent("report.bin").path
            let content = SecureRandom.bytes(count: 5 << 20)
            try AtomicFile.write(content, to: plain)
            let key = SecretBytes.random(count: 32).symmetricKey
            try FileEncryption.encryptFile(at: plain, to: plain + ".sfs", key: key)
            try FileEncryption.decryptFile(at: plain + ".sfs", to: plain + ".out", key: key)
            try check(try Hashing.hash(fileAt: plain + ".out") == Hashing.hash(content), "file round trip")
            return "report.bin → report.bin.sfs → report.bin.out, identical"
        }
        try step("Seal a property list (the seed's EncryptPlistObject)") {
            let key = SecretBytes.random(count: 32).symmetricKey
            let box = try Envelope.seal(propertyList: ["user": "ada", "pin": 1234], key: key)
            let back = try Envelope.openPropertyList(box, key: key) as? [String: Any]
            try check(back?["user"] as? String == "ada", "plist round trip")
            return "dictionary sealed in \(box.count) bytes and restored"
        }
    }
}
