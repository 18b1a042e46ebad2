import AgeEncryption
import Foundation
import SFTestSupport
import SecureCore
import Testing

/// Live interoperability with the reference `age` CLI and with Python `pyrage` (rage), through the
/// built `sf` binary. A missing peer is reported as skipped by the runner, and fails under CI=true.
@Suite(.serialized) struct PeerTests {
    static let sizes = [0, 1, 64 * 1024, 64 * 1024 + 1, 100 << 20]

    /// The peer's path; throws `PeerMissing` (reached only under CI, where the condition traits
    /// below force the tests to run).
    static func require(_ peer: Peer) throws -> String { try TestSupport.path(of: peer) }

    /// The built `sf` binary.
    static func sf() throws -> String {
        try #require(TestSupport.sfBinary, "the sf binary was not built alongside the tests").path
    }

    /// A temporary directory with an age-keygen identity and a plaintext of `size` bytes.
    static func workspace(size: Int) throws -> (URL, String) {
        let dir = try TestSupport.temporaryDirectory("age-peer")
        let plaintext = dir.appendingPathComponent("plain")
        // A repeating random block keeps generation cheap for 100 MiB while staying non-trivial.
        let block = SecureRandom.bytes(count: min(size, 1 << 20))
        #expect(FileManager.default.createFile(atPath: plaintext.path, contents: nil))
        let handle = try FileHandle(forWritingTo: plaintext)
        var written = 0
        while written < size {
            let n = min(block.count, size - written)
            try handle.write(contentsOf: block.prefix(n))
            written += n
        }
        try handle.close()
        let keygen = try TestSupport.run("age-keygen", ["-o", dir.appendingPathComponent("key").path])
        #expect(keygen.status == 0)
        let recipient = try TestSupport.run("age-keygen", ["-y", dir.appendingPathComponent("key").path])
        return (dir, recipient.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func sameFile(_ a: URL, _ b: URL) throws -> Bool {
        try TestSupport.run("cmp", ["-s", a.path, b.path]).status == 0
    }

    // Live peer: the reference age and age-keygen.
    @Test(.requires(.age, .ageKeygen), arguments: sizes, [false, true])
    func ageEncryptsSfDecrypts(size: Int, armored: Bool) throws {
        let age = try Self.require(.age), sf = try Self.sf()
        let (dir, recipient) = try Self.workspace(size: size)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let encrypt = try TestSupport.run(age, ["-r", recipient] + (armored ? ["-a"] : []) + ["-o", path("c.age"), path("plain")])
        #expect(encrypt.status == 0, "\(encrypt.stderrText)")
        let decrypt = try TestSupport.run(sf, ["decrypt", "-i", path("key"), "-o", path("out"), path("c.age")])
        #expect(decrypt.status == 0, "\(decrypt.stderrText)")
        #expect(try Self.sameFile(dir.appendingPathComponent("plain"), dir.appendingPathComponent("out")))
    }

    // Live peer: the reference age and age-keygen.
    @Test(.requires(.age, .ageKeygen), arguments: sizes, [false, true])
    func sfEncryptsAgeDecrypts(size: Int, armored: Bool) throws {
        let age = try Self.require(.age), sf = try Self.sf()
        let (dir, recipient) = try Self.workspace(size: size)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let encrypt = try TestSupport.run(sf, ["encrypt", "-r", recipient] + (armored ? ["-a"] : []) + ["-o", path("c.age"), path("plain")])
        #expect(encrypt.status == 0, "\(encrypt.stderrText)")
        let decrypt = try TestSupport.run(age, ["-d", "-i", path("key"), "-o", path("out"), path("c.age")])
        #expect(decrypt.status == 0, "\(decrypt.stderrText)")
        if size == 0 {
            // age 1.1.1 creates the -o file only on its first write, so an empty plaintext leaves none.
            let toStdout = try TestSupport.run(age, ["-d", "-i", path("key"), path("c.age")])
            #expect(toStdout.status == 0 && toStdout.stdout.isEmpty)
        } else {
            #expect(try Self.sameFile(dir.appendingPathComponent("plain"), dir.appendingPathComponent("out")))
        }
    }

    // Live peer: the reference age and age-keygen.
    @Test(.requires(.age, .ageKeygen))
    func sfKeygenIdentityWorksWithAge() throws {
        let age = try Self.require(.age), sf = try Self.sf()
        let dir = try TestSupport.temporaryDirectory("age-peer")
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = dir.appendingPathComponent("key").path
        let keygen = try TestSupport.run(sf, ["keygen", "-o", key])
        #expect(keygen.status == 0)
        #expect(keygen.stderrText.hasPrefix("Public key: age1"))
        let attributes = try FileManager.default.attributesOfItem(atPath: key)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let encrypted = try TestSupport.run(age, ["-e", "-i", key, "-a"], stdin: Data("peer".utf8))
        #expect(encrypted.status == 0)
        let decrypted = try TestSupport.run(sf, ["decrypt", "-i", key], stdin: encrypted.stdout)
        #expect(decrypted.stdoutText == "peer")
        let recipients = try TestSupport.run(sf, ["keygen", "-y", key])
        let ageRecipients = try TestSupport.run("age-keygen", ["-y", key])
        #expect(recipients.stdoutText == ageRecipients.stdoutText)
    }

    /// Passphrase files, both directions, with Python pyrage (rage's bindings).
    // Live peer: Python pyrage.
    @Test(.requires(.pyrage))
    func pyragePassphraseBothDirections() throws {
        let python = try Self.require(.pyrage), sf = try Self.sf()
        let dir = try TestSupport.temporaryDirectory("age-pyrage")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let plaintext = SecureRandom.bytes(count: 200_000)
        try plaintext.write(to: dir.appendingPathComponent("plain"))
        try Data("pässphrase with spaces\n".utf8).write(to: dir.appendingPathComponent("pass"))
        let script = """
            import sys, pyrage
            mode, pw, src, dst = sys.argv[1], open(sys.argv[2], 'rb').read().split(b'\\n')[0].decode(), sys.argv[3], sys.argv[4]
            data = open(src, 'rb').read()
            out = pyrage.passphrase.encrypt(data, pw) if mode == 'e' else pyrage.passphrase.decrypt(data, pw)
            open(dst, 'wb').write(out)
            """
        // pyrage → sf
        let pyEncrypt = try TestSupport.run(python, ["-c", script, "e", path("pass"), path("plain"), path("py.age")])
        #expect(pyEncrypt.status == 0, "\(pyEncrypt.stderrText)")
        let sfDecrypt = try TestSupport.run(sf, ["decrypt", "--passphrase-file", path("pass"), "-o", path("out1"), path("py.age")])
        #expect(sfDecrypt.status == 0, "\(sfDecrypt.stderrText)")
        #expect(try Data(contentsOf: dir.appendingPathComponent("out1")) == plaintext)
        // sf → pyrage
        let sfEncrypt = try TestSupport.run(sf, ["encrypt", "--passphrase-file", path("pass"), "-o", path("sf.age"), path("plain")])
        #expect(sfEncrypt.status == 0, "\(sfEncrypt.stderrText)")
        let pyDecrypt = try TestSupport.run(python, ["-c", script, "d", path("pass"), path("sf.age"), path("out2")])
        #expect(pyDecrypt.status == 0, "\(pyDecrypt.stderrText)")
        #expect(try Data(contentsOf: dir.appendingPathComponent("out2")) == plaintext)
    }
}
