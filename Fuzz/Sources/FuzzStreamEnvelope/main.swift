import Crypto
import Foundation
import FuzzSupport
import SecureCore

// SFS1 streams (header, chunk framing, final-chunk rules), read from a file and decrypted to
// /dev/null with a fixed raw key and with a passphrase (KDF costs capped by FuzzLimits.kdf).
let key = SymmetricKey(data: Data(repeating: 0x22, count: 32))
let passphrase = Data(FuzzLimits.passphrase.utf8)
let scratch = Fuzz.scratchDirectory("stream")
let inputPath = scratch + "/input"
let devNull = open("/dev/null", O_WRONLY)

func stream(_ plaintext: Data, _ seal: (borrowing FileInput, borrowing FileOutput) throws -> Void) throws -> Data {
    let plainPath = scratch + "/plain", sealedPath = scratch + "/sealed"
    try plaintext.write(to: URL(fileURLWithPath: plainPath))
    let fd = open(sealedPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    defer { close(fd) }
    try seal(FileInput(path: plainPath), FileOutput(descriptor: fd, name: sealedPath))
    return try Data(contentsOf: URL(fileURLWithPath: sealedPath))
}

Fuzz.main(seeds: {
    var seeds: [Data] = []
    for algorithm in [Envelope.Algorithm.aes256GCM, .chaCha20Poly1305] {
        for plaintext in [Data(), Data("hello stream".utf8), Data(repeating: 0x62, count: 1000)] {
            seeds.append(try stream(plaintext) { try StreamEnvelope.encrypt(from: $0, to: $1, key: key, algorithm: algorithm) })
            seeds.append(
                try stream(plaintext) {
                    try StreamEnvelope.encrypt(
                        from: $0, to: $1, passphrase: passphrase, kdf: .scrypt(logN: 4, r: 1, p: 1), algorithm: algorithm)
                })
        }
    }
    return seeds
}) { input in
    guard (try? input.write(to: URL(fileURLWithPath: inputPath))) != nil else { return }
    let output = FileOutput(descriptor: devNull, name: "/dev/null")
    if let source = try? FileInput(path: inputPath) {
        try? StreamEnvelope.decrypt(from: source, to: output, key: key)
    }
    if let source = try? FileInput(path: inputPath) {
        try? StreamEnvelope.decrypt(from: source, to: output, passphrase: passphrase, limits: FuzzLimits.kdf)
    }
}
