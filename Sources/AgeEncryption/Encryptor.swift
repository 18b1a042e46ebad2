import Foundation
import SecureCore

extension Age {
    /// Streaming encryption to one or more recipients, with memory bounded independently of the
    /// input size (about 8 MiB: SecureCore's STREAM engine, shared with SFS1). Write plaintext with
    /// `write`, or pull it from a source with `encrypt(from:)` (reading, sealing on all cores and
    /// writing overlap), then call `finish()`; the output is incomplete until `finish()` returns.
    public final class Encryptor {
        private let payload: STREAM.Encryptor
        private let output: ByteSink
        private let armor: ArmorWriter?
        private var finished = false

        /// Writes the header (and the armor's first line when `armored`) to `sink`.
        /// Throws `invalidRecipientSet` for no recipients, or for recipients whose labels differ
        /// (age 1.3's rule): a passphrase among others, or a post-quantum recipient mixed with
        /// classical ones; and, before anything is written, for stanzas `Decryptor` would refuse
        /// (more than `Header.maximumStanzaCount`, an argument that is empty or not VCHAR, a header
        /// over `Header.maximumHeaderBytes`: see `Header.encodedForWriting`).
        public init(recipients: [any Recipient], to sink: ByteSink, armored: Bool = false) throws {
            guard let first = recipients.first else { throw AgeError.invalidRecipientSet("no recipients") }
            for other in recipients.dropFirst() where other.labels != first.labels {
                if other is Age.ScryptRecipient || first is Age.ScryptRecipient {
                    throw AgeError.invalidRecipientSet("a passphrase cannot be combined with other recipients")
                }
                if other.labels.contains(Age.postQuantumLabel) != first.labels.contains(Age.postQuantumLabel) {
                    throw AgeError.invalidRecipientSet(
                        "a post-quantum recipient cannot be combined with classical ones (the file would lose its post-quantum protection)")
                }
                throw AgeError.invalidRecipientSet(
                    "incompatible recipients: labels \(first.labels.sorted()) and \(other.labels.sorted()) differ")
            }
            let fileKey = Age.generateFileKey()
            var stanzas = [Stanza]()
            for recipient in recipients {
                stanzas += try recipient.wrap(fileKey: fileKey)
                // Refused at once, not after the other wraps, each of which may cost a public-key
                // operation: a recipients file of a million lines stops after the stanzas a reader accepts.
                guard stanzas.count <= Header.maximumStanzaCount else {
                    throw AgeError.invalidRecipientSet(
                        "more than \(Header.maximumStanzaCount) recipient stanzas (\(recipients.count) recipients), over the \(Header.maximumStanzaCount) a reader accepts")
                }
            }
            var start = try Header.encodedForWriting(stanzas, fileKey: fileKey)
            let armor = armored ? try ArmorWriter(sink: sink) : nil
            let output: ByteSink = armor ?? sink
            let nonce = SecureRandom.bytes(count: Stream.payloadNonceSize)
            start.append(nonce)
            try start.withUnsafeBytes { try output.write($0) }
            self.armor = armor
            self.output = output
            self.payload = STREAM.Encryptor(Stream.payload(fileKey: fileKey, nonce: nonce))
        }

        /// Encrypts `bytes` (buffered until a batch of chunks is complete).
        /// Throws `AgeError.io` or what the sink throws.
        public func write(_ bytes: UnsafeRawBufferPointer) throws {
            precondition(!finished, "write after finish")
            try payload.write(bytes, to: { try output.write($0) })
        }

        /// Encrypts `data`.
        /// Throws `AgeError.io` or what the sink throws.
        public func write(_ data: some DataProtocol) throws {
            for region in data.regions { try region.withUnsafeBytes { try write($0) } }
        }

        /// Encrypts everything `source` yields, then finishes the file: reading, sealing on all
        /// cores and writing overlap.
        /// Throws `AgeError.io` or what the source or sink throws.
        public func encrypt(from source: ByteSource) throws {
            precondition(!finished, "encrypt after finish")
            finished = true
            try payload.encrypt(reading: { try source.read(into: $0) }, writing: { try self.output.write($0) })
            try armor?.finish()
        }

        /// Seals the final chunk and closes the armor. Call exactly once.
        /// Throws `AgeError.io` or what the sink throws.
        public func finish() throws {
            guard !finished else { return }
            finished = true
            try payload.finish(to: { try output.write($0) })
            try armor?.finish()
        }
    }

    /// Whether encrypted input is armored.
    public enum Encoding: Sendable {
        /// Binary age.
        case binary
        /// ASCII armor, strictly decoded.
        case armored
        /// Armored when the first non-whitespace byte is `-` (binary age files start with `a`).
        case detect
    }

    /// Streaming decryption with bounded memory (about 8 MiB). The initializer reads the header and
    /// unwraps the file key; `read(into:)` or `decrypt(to:)` then release plaintext only after its
    /// 64 KiB chunk authenticated. After an error, the plaintext already released is authentic but
    /// incomplete, and the caller must discard it (the file helpers do). Payload failures follow
    /// the STREAM rule shared with SFS1: `truncated` (cut at a chunk boundary), `trailingData`
    /// (bytes after a full final chunk), `payloadAuthenticationFailed(chunk:)` (also for a short final
    /// chunk with bytes after it), `emptyFinalChunk`.
    public final class Decryptor {
        private let payload: STREAM.Decryptor
        private let input: ByteSource
        private var chunks: [Data] = []
        private var chunkIndex = 0
        private var chunkOffset = 0
        private var done = false

        /// Reads the header from `source` and unwraps the file key with the first identity that
        /// matches. Throws `malformedHeader`, `unsupportedVersion`, `armor`, `noIdentityMatched`,
        /// `headerMACMismatch` or `workFactorAboveCeiling` before any plaintext exists.
        public init(from source: ByteSource, identities: [any Identity], encoding: Encoding = .detect) throws {
            let raw = BufferedSource(source)
            let armored: Bool
            switch encoding {
            case .binary: armored = false
            case .armored: armored = true
            case .detect: armored = try Armor.looksArmored(raw)
            }
            let input = armored ? BufferedSource(ArmorReader(raw)) : raw
            let header = try Header.parse(from: input)
            if header.stanzas.count > 1, header.stanzas.contains(where: { $0.type == ScryptRecipient.stanzaType }) {
                throw AgeError.malformedHeader("an scrypt stanza must be the only stanza in the header")
            }
            var fileKey: SecretBytes?
            for identity in identities {
                if let key = try identity.unwrap(stanzas: header.stanzas) {
                    fileKey = key
                    break
                }
            }
            guard let fileKey else { throw AgeError.noIdentityMatched }
            guard header.verifyMAC(fileKey: fileKey) else { throw AgeError.headerMACMismatch }
            var nonce = Data(count: Stream.payloadNonceSize)
            let n = try nonce.withUnsafeMutableBytes { try input.readFully(into: $0) }
            guard n == Stream.payloadNonceSize else { throw AgeError.malformedHeader("the payload nonce is missing or short") }
            self.input = input
            payload = STREAM.Decryptor(Stream.payload(fileKey: fileKey, nonce: nonce))
        }

        /// Fills `buffer` with authenticated plaintext; fewer bytes than its size only at the end,
        /// 0 once the payload ended correctly. Throws on the first chunk that does not authenticate.
        public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            var total = 0
            while total < buffer.count {
                if chunkIndex == chunks.count {
                    if done { break }
                    chunks = try payloadErrors { try payload.nextBatch(reading: { try input.read(into: $0) }) }
                    chunkIndex = 0
                    chunkOffset = 0
                    if chunks.isEmpty { done = true }
                    continue
                }
                let chunk = chunks[chunkIndex]
                let n = min(buffer.count - total, chunk.count - chunkOffset)
                chunk.copyBytes(
                    to: UnsafeMutableRawBufferPointer(rebasing: buffer[total..<total + n]).bindMemory(to: UInt8.self),
                    from: chunk.startIndex + chunkOffset..<chunk.startIndex + chunkOffset + n)
                chunkOffset += n
                total += n
                if chunkOffset == chunk.count {
                    chunkIndex += 1
                    chunkOffset = 0
                }
            }
            return total
        }

        /// Writes all the plaintext to `sink`, chunk by chunk as each batch authenticates; reading,
        /// opening on all cores and writing overlap.
        /// Throws a payload `AgeError` (`payloadAuthenticationFailed`, `truncated`, `trailingData`, `emptyFinalChunk`), or what the source or sink throws.
        public func decrypt(to sink: ByteSink) throws {
            precondition(chunks.isEmpty, "decrypt(to:) after read(into:)")
            try payloadErrors { try payload.decrypt(reading: { try input.read(into: $0) }, writing: { try sink.write($0) }) }
        }
    }
}
