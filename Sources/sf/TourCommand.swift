import ArgumentParser
import Crypto
import Foundation
import SecureFoundation
import ServiceDiscovery

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
        let keychain = try Keychain(path: home.appendingPathComponent("keychain.db").path)
        defer { try? keychain.close() }
        let vault = try tour.keychainAndVault(keychain)
        try tour.keys(keychain: keychain, vault: vault)
        try tour.records(vault: vault)
        try tour.age()
        try tour.channel()
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
        try step("Derive a subkey with HKDF-SHA256 (checked against RFC 5869's first test case)") {
            let okm = try KeyDerivation.hkdf(
                inputKeyMaterial: SecretBytes(Data(repeating: 0x0b, count: 22)), salt: Data(0x00...0x0c), info: Data(0xf0...0xf9),
                outputByteCount: 42)
            let expected = "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
            try check(okm.withUnsafeBytes { Hex.encode(Data($0)) } == expected, "HKDF RFC 5869 A.1")
            return "42 bytes, equal to the RFC's output"
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
            try OutputDestination.write(content, to: plain)
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

    /// The keychain and vault steps; returns the vault, set up and unlocked, for the later steps.
    func keychainAndVault(_ keychain: Keychain) throws -> Vault {
        print("\nSecureKeychain and SecureVault: the iMAS keychain and crypto manager, fixed.\n")
        try step("Store a password; writes are coalesced in the background, synchronize() makes them durable") {
            try keychain.setPassword("s3cret", service: "mail", account: "ada")
            try keychain.setPassword("other", service: "mail", account: "bob")
            try keychain.synchronizeBlocking()
            try check(try keychain.password(service: "mail", account: "ada") == "s3cret", "keychain read")
            try keychain.deletePassword(service: "mail", account: "bob")
            try check(keychain.accounts(service: "mail") == ["ada"], "delete one account only")
            return "mail/ada stored; deleting mail/bob left mail/ada alone"
        }
        let vault = Vault(keychain: keychain, configuration: Vault.Configuration(kdf: .scrypt(logN: 15, r: 8, p: 1)))
        let passcode = SecretBytes(Data("1234-5678".utf8))
        try step("Set up the vault: one random application key, wrapped by a passcode and by security answers (scrypt logN 15 here for a quick tour; the default is 17)") {
            try vault.setUp(passcode: passcode, questions: ["First pet?", "Street you grew up on?"], answers: ["Rex", "Elm"])
            try check(vault.hasPasscode && vault.hasSecurityQuestionsAndAnswers && !vault.isLocked, "vault set up")
            return "questions stay readable while locked: \(vault.securityQuestions.joined(separator: " / "))"
        }
        try step("Seal a keychain item with the application key; lock the vault and the item will not open") {
            try keychain.setSecurePassword("card 4111", service: "wallet", account: "ada", sealer: vault)
            vault.purge()
            do {
                _ = try keychain.securePassword(service: "wallet", account: "ada", sealer: vault)
                throw CLIError("tour check failed: a locked vault opened an item")
            } catch KeychainError.locked {}
            return "purge() zeroed the key; reading the secure item now fails with 'locked'"
        }
        try step("A wrong passcode never unlocks; the answers (normalized: case, spaces) recover access") {
            do {
                try vault.unlock(passcode: SecretBytes(Data("0000-0000".utf8)))
                throw CLIError("tour check failed: a wrong passcode unlocked")
            } catch VaultError.wrongPasscode {}
            try vault.recover(answers: ["  REX ", "elm"], newPasscode: SecretBytes(Data("new passcode".utf8)))
            try check(try keychain.securePassword(service: "wallet", account: "ada", sealer: vault) == "card 4111", "recovered")
            return "wrong passcode rejected; recovered with the answers and set a new passcode"
        }
        return vault
    }

    func keys(keychain: Keychain, vault: Vault) throws {
        print("\nSecureKeys: Heimdall for Swift everywhere.\n")
        try step("Keep a P-256 key pair in the keychain by tag (private half sealed by the vault) and a partner's public key") {
            let store = KeyStore(keychain: keychain)
            _ = try store.generate(.p256, tag: "me", sealer: vault)
            let partner = try AsymmetricPrivateKey.generate(.ed25519)
            try store.storePartnerKey(partner.publicKey, tag: "bob")
            let signature = try store.privateKey(tag: "me", sealer: vault).signature(for: Data("invoice 7".utf8))
            try check(try store.verifiedPublicKey(tag: "me", sealer: vault).isValidSignature(signature, for: Data("invoice 7".utf8)), "tag signature")
            try check(try store.publicKey(tag: "bob").fingerprint == partner.publicKey.fingerprint, "partner key")
            let entries = try store.list()
            try check(entries.map(\.tag).sorted() == ["bob", "me"] && entries.filter(\.hasPrivateKey).map(\.tag) == ["me"], "key list")
            vault.purge()
            defer { try? vault.unlock(passcode: SecretBytes(Data("new passcode".utf8))) }
            try check((try? store.privateKey(tag: "me", sealer: vault)) == nil, "locked vault keeps the private key shut")
            return "signed with tag 'me', verified; partner 'bob' stored public-only; the private key stays shut while the vault is locked"
        }
        try step("Generate an Ed25519 key; sign and verify; a changed message fails") {
            let key = try AsymmetricPrivateKey.generate(.ed25519)
            let signature = try key.signature(for: Data("release 1.0".utf8))
            try check(key.publicKey.isValidSignature(signature, for: Data("release 1.0".utf8)), "valid signature")
            try check(!key.publicKey.isValidSignature(signature, for: Data("release 1.1".utf8)), "changed message")
            return "fingerprint \(key.publicKey.fingerprint)"
        }
        try step("Encrypt a message of any length to an X25519 public key (HPKE); only that key opens it") {
            let recipient = try AsymmetricPrivateKey.generate(.x25519)
            let message = SecureRandom.bytes(count: 100_000)
            let box = try HybridEncryption.encrypt(message, to: recipient.publicKey)
            try check(try HybridEncryption.decrypt(box, with: recipient) == message, "hybrid round trip")
            let stranger = try AsymmetricPrivateKey.generate(.x25519)
            try check((try? HybridEncryption.decrypt(box, with: stranger)) == nil, "wrong recipient")
            return "100,000 bytes in a \(box.count)-byte SFK1 message; another key is refused"
        }
    }

    func records(vault: Vault) throws {
        print("\nSecureRecords: the Xmas gift list, fixed.\n")
        let store = try RecordStore(
            path: home.appendingPathComponent("records.db").path,
            configuration: .init(passwordKDF: .scrypt(logN: 15, r: 8, p: 1)))
        try store.createCollection("gifts", schema: try RecordSchema(["toWhom": .clear, "description": .sealed]))
        try step("Gifts with their own passwords: 'to whom' stays searchable, the description is sealed (scrypt logN 15 here; default 17)") {
            let alice = try store.add(["toWhom": "Alice", "description": "a red bicycle"], to: "gifts", sealing: .password(SecretBytes(Data("alice pw".utf8))))
            _ = try store.add(["toWhom": "Bob", "description": "a kite"], to: "gifts", sealing: .password(SecretBytes(Data("bob pw".utf8))))
            let found = try store.search(in: "gifts", [.equals(field: "toWhom", value: "Alice")])
            try check(found.map(\.id) == [alice] && found[0].openedFields.isEmpty, "clear search, nothing decrypted")
            try check(try store.open(alice, password: SecretBytes(Data("alice pw".utf8))).fields["description"] == "a red bicycle", "opened")
            do {
                _ = try store.open(alice, password: SecretBytes(Data("bob pw".utf8)))
                throw CLIError("tour check failed: Bob's password opened Alice's gift")
            } catch RecordsError.authenticationFailed {}
            return "found Alice's gift by name without decrypting; her password opens it, Bob's does not"
        }
        try step("Vault-keyed records with a blind index: equality search on a sealed field without decrypting") {
            try store.createCollection("staff", schema: try RecordSchema(["name": .clear, "ssn": .sealedIndexed]))
            try store.unlock(with: vault)
            let ids = try store.add(contentsOf: (0..<300).map { ["name": .string("person \($0)"), "ssn": .string("078-05-\(1000 + $0)")] }, to: "staff")
            let hit = try store.search(in: "staff", [.equals(field: "ssn", value: "078-05-1120")])
            try check(hit.map(\.id) == [ids[120]], "blind index hit")
            try check(try store.search(in: "staff", [.equals(field: "ssn", value: "078-05-112")]).isEmpty, "no near match")
            return "300 records sealed under the store key (wrapped by the vault); one match, none for a near value"
        }
    }

    func age() throws {
        print("\nAgeEncryption: files in the age v1 format, readable by age and rage.\n")
        try step("Encrypt to an age X25519 recipient (armored) and decrypt with its identity") {
            let identity = Age.X25519Identity()
            let text = try Age.encrypt(Data("hello, age".utf8), to: [identity.recipient], armored: true)
            try check(String(decoding: text, as: UTF8.self).hasPrefix("-----BEGIN AGE ENCRYPTED FILE-----"), "armor")
            try check(try Age.decrypt(text, identities: [identity]) == Data("hello, age".utf8), "age round trip")
            return "recipient \(identity.recipient.string.prefix(20))…; armored text and round trip checked (interoperability with age itself is tested by the suite)"
        }
    }

    func channel() throws {
        print("\nSecureChannel and ServiceDiscovery: the CryptoExercise exchange, done as a Noise channel.\n")
        try step("A Noise_XX handshake (mutual authentication, forward secrecy), then transport messages both ways") {
            let name = try Noise.ProtocolName(parsing: "Noise_XX_25519_ChaChaPoly_SHA256")
            let serverKey = Curve25519.KeyAgreement.PrivateKey(), clientKey = Curve25519.KeyAgreement.PrivateKey()
            let client = try Noise.HandshakeState(protocolName: name, role: .initiator, prologue: Data("tour".utf8), staticKey: clientKey)
            let server = try Noise.HandshakeState(protocolName: name, role: .responder, prologue: Data("tour".utf8), staticKey: serverKey)
            _ = try server.readMessage(try client.writeMessage())
            _ = try client.readMessage(try server.writeMessage())
            _ = try server.readMessage(try client.writeMessage())
            try check(client.isComplete && server.isComplete && client.handshakeHash == server.handshakeHash, "handshake")
            try check(client.remoteStaticKey?.rawRepresentation == serverKey.publicKey.rawRepresentation, "server authenticated")
            try check(server.remoteStaticKey?.rawRepresentation == clientKey.publicKey.rawRepresentation, "client authenticated")
            let (toServer, toClient) = (try client.transportState(), try server.transportState())
            let sealed = try toServer.writeMessage(Data("wrapped key please".utf8))
            try check(try toClient.readMessage(sealed) == Data("wrapped key please".utf8), "client to server")
            var tampered = try toServer.writeMessage(Data("again".utf8))
            tampered[0] ^= 1
            try check((try? toClient.readMessage(tampered)) == nil, "tampered message")
            return "both static keys verified, handshake hashes equal; a flipped byte is rejected (the suite runs it over TCP and against Python noiseprotocol)"
        }
        try step("Advertise it by DNS-SD: the announcement's wire form parses back to the same records") {
            let records = try ServiceRecords(
                instance: try ServiceInstanceName("tour"), type: .secureChannel, hostLabel: "tour-host", port: 7000,
                txt: try TXTRecord(["fp": "sha256-spki:00", "v": "1"]), addresses: [IPAddress("127.0.0.1")].compactMap { $0 })
            let wire = try records.announcement().serialized()
            try check(try DNSMessage(parsing: wire) == records.announcement(), "DNS round trip")
            try check((try? DNSMessage(parsing: Array(wire.dropLast(3)))) == nil, "truncated packet")
            return "\(wire.count)-byte announcement; a truncated one is a typed error (mDNS itself runs only in the suite's network namespaces)"
        }
    }
}
