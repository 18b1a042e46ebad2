import Crypto
import Foundation
import SecureCore

extension Age {
    /// The textual header of an age v1 file: recipient stanzas and the header MAC.
    public struct Header: Sendable, Equatable {
        /// The version line, without its line feed.
        static let versionLine = "age-encryption.org/v1"
        /// Ceiling on the number of stanzas read from untrusted input: each one can cost a public-key
        /// operation per identity before the header can be authenticated.
        public static let maximumStanzaCount = 1024
        /// Ceiling on one header line's length (the longest native argument line is under 1,600 bytes).
        static let maximumLineLength = 16 * 1024
        /// Base64 characters in one stanza body: 64 KiB, far above any stanza type's body (a wrapped
        /// 16-byte file key), so a hostile header cannot grow memory without bound.
        static let maximumStanzaBodyColumns = 64 * 1024
        /// Ceiling on the whole header's bytes: far above the most stanzas of any known type (1,024
        /// hybrid post-quantum stanzas take about 1.6 MB), so that a hostile header cannot take the
        /// 84 MB the other ceilings allow before its MAC can be checked.
        public static let maximumHeaderBytes = 4 << 20

        /// The recipient stanzas, in file order (at least one).
        public var stanzas: [Stanza]
        /// The 32-byte HMAC-SHA-256 over `macInput`.
        public var mac: Data

        /// The header bytes the MAC covers: everything up to and including `---`.
        public var macInput: Data { Header.encodeWithoutMAC(stanzas) }

        /// A header with `stanzas` whose MAC is computed from `fileKey`.
        init(stanzas: [Stanza], fileKey: SecretBytes) {
            self.stanzas = stanzas
            self.mac = Header.computeMAC(over: Header.encodeWithoutMAC(stanzas), fileKey: fileKey)
        }

        /// A parsed header.
        init(stanzas: [Stanza], mac: Data) {
            self.stanzas = stanzas
            self.mac = mac
        }

        /// The encoded header, ending with the MAC line's line feed.
        public func encoded() -> Data {
            var out = Header.encodeWithoutMAC(stanzas)
            out.append(contentsOf: " \(RawBase64.encode(mac))\n".utf8)
            return out
        }

        /// True when `mac` is the MAC of this header under `fileKey` (constant-time comparison).
        public func verifyMAC(fileKey: SecretBytes) -> Bool {
            ConstantTime.equal(Header.computeMAC(over: macInput, fileKey: fileKey), mac)
        }

        static func computeMAC(over bytes: Data, fileKey: SecretBytes) -> Data {
            let key = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: fileKey.symmetricKey, info: Data("header".utf8), outputByteCount: 32)
            return Data(HMAC<SHA256>.authenticationCode(for: bytes, using: key))
        }

        /// The encoded header of `stanzas`, MAC'd under `fileKey`, after checking that this module's
        /// reader (`parse`, then the decryptor) reads it back, so that nothing is written that cannot be
        /// decrypted. Throws `AgeError.invalidRecipientSet` for no stanza or more than
        /// `maximumStanzaCount`; a stanza without arguments, or with an argument that is empty or not
        /// VCHAR (the specification's `1*VCHAR`: a space, a line feed or a non-ASCII character would
        /// change the header's grammar); an argument line over `maximumLineLength`; a body over
        /// `maximumStanzaBodyColumns` base64 characters; an scrypt stanza among others; or more than
        /// `maximumHeaderBytes` in all. Custom `Recipient` types can produce any of these.
        static func encodedForWriting(_ stanzas: [Stanza], fileKey: SecretBytes) throws(AgeError) -> Data {
            guard !stanzas.isEmpty else { throw .invalidRecipientSet("the recipients wrapped the file key into no stanza") }
            guard stanzas.count <= maximumStanzaCount else {
                throw .invalidRecipientSet(
                    "\(stanzas.count) recipient stanzas, over the \(maximumStanzaCount) a reader accepts")
            }
            for stanza in stanzas {
                guard !stanza.arguments.isEmpty,
                    stanza.arguments.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy(isVisible) })
                else {
                    throw .invalidRecipientSet(
                        "a recipient made a stanza argument that is missing, empty, or not printable ASCII without spaces")
                }
                // "-> ", then the arguments separated by single spaces.
                let lineLength = 2 + stanza.arguments.reduce(0) { $0 + 1 + $1.utf8.count }
                guard lineLength <= maximumLineLength else {
                    throw .invalidRecipientSet("a recipient made a stanza line longer than \(maximumLineLength) bytes")
                }
                // n bytes take ⌈4n/3⌉ base64 characters, at most the ceiling exactly when n ≤ 3/4 of it.
                guard stanza.body.count <= maximumStanzaBodyColumns / 4 * 3 else {
                    throw .invalidRecipientSet(
                        "a recipient made a stanza body longer than \(maximumStanzaBodyColumns) base64 characters")
                }
            }
            // The decryptor's rule (`Decryptor.init`); the passphrase recipient's label keeps it alone,
            // but a custom recipient may make an scrypt stanza too.
            if stanzas.count > 1, stanzas.contains(where: { $0.type == ScryptRecipient.stanzaType }) {
                throw .invalidRecipientSet("an scrypt stanza must be the only stanza in the header")
            }
            let encoded = Header(stanzas: stanzas, fileKey: fileKey).encoded()
            guard encoded.count <= maximumHeaderBytes else {
                throw .invalidRecipientSet("a header of \(encoded.count) bytes, over the \(maximumHeaderBytes) a reader accepts")
            }
            return encoded
        }

        /// The header bytes up to and including `---`: what the MAC covers. Linear in the size of
        /// the stanzas (bodies of up to 64 KiB of base64 each are allowed), on bytes, not characters.
        static func encodeWithoutMAC(_ stanzas: [Stanza]) -> Data {
            var out = Data((versionLine + "\n").utf8)
            for stanza in stanzas {
                out.append(contentsOf: ("-> " + stanza.arguments.joined(separator: " ") + "\n").utf8)
                let body = Array(RawBase64.encode(stanza.body).utf8)
                // Full 64-column lines, then a final line shorter than 64 (possibly empty).
                for start in stride(from: 0, through: body.count, by: 64) {
                    out.append(contentsOf: body[start..<min(start + 64, body.count)])
                    out.append(UInt8(ascii: "\n"))
                }
            }
            out.append(contentsOf: "---".utf8)
            return out
        }

        /// Reads and strictly parses a header from `source`, leaving it positioned at the payload.
        static func parse(from source: BufferedSource) throws -> Header {
            var budget = maximumHeaderBytes
            let version = try readLine(source, &budget)
            guard version == Array(versionLine.utf8) else {
                let prefix = Array("age-encryption.org/".utf8)
                if version.starts(with: prefix), version.count > prefix.count, version.allSatisfy(isVisible) {
                    throw AgeError.unsupportedVersion(String(decoding: version, as: UTF8.self))
                }
                throw AgeError.malformedHeader("the file does not start with an age version line")
            }
            var stanzas = [Stanza]()
            while true {
                let line = try readLine(source, &budget)
                if line.starts(with: Array("-> ".utf8)) {
                    guard stanzas.count < maximumStanzaCount else {
                        throw AgeError.malformedHeader("more than \(maximumStanzaCount) recipient stanzas")
                    }
                    stanzas.append(try parseStanza(argumentLine: line, source: source, budget: &budget))
                } else if line.starts(with: Array("---".utf8)) {
                    guard !stanzas.isEmpty else { throw AgeError.malformedHeader("the header has no recipient stanza") }
                    return Header(stanzas: stanzas, mac: try parseMAC(line))
                } else {
                    throw AgeError.malformedHeader("a header line starts with neither \"->\" nor \"---\"")
                }
            }
        }

        private static func parseStanza(argumentLine line: [UInt8], source: BufferedSource, budget: inout Int) throws -> Stanza {
            let arguments = line.dropFirst(3).split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
            guard arguments.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isVisible) }) else {
                throw AgeError.malformedHeader("a stanza argument is empty or not printable ASCII")
            }
            var body = [UInt8]()
            while true {
                let bodyLine = try readLine(source, &budget)
                guard bodyLine.count <= 64, bodyLine.allSatisfy(RawBase64.isAlphabet) else {
                    throw AgeError.malformedHeader("a stanza body line is longer than 64 columns or not base64")
                }
                body += bodyLine
                // Bound memory before the MAC is checked: no known stanza body comes near this size.
                guard body.count <= Self.maximumStanzaBodyColumns else {
                    throw AgeError.malformedHeader("a stanza body is longer than \(Self.maximumStanzaBodyColumns) base64 characters")
                }
                if bodyLine.count < 64 { break }
            }
            guard let decoded = RawBase64.decode(String(decoding: body, as: UTF8.self)) else {
                throw AgeError.malformedHeader("a stanza body is not canonical base64")
            }
            return Stanza(arguments: arguments.map { String(decoding: $0, as: UTF8.self) }, body: decoded)
        }

        private static func parseMAC(_ line: [UInt8]) throws -> Data {
            guard line.count == 4 + 43, line[3] == UInt8(ascii: " "),
                let mac = RawBase64.decode(String(decoding: line[4...], as: UTF8.self)), mac.count == 32
            else { throw AgeError.malformedHeader("the MAC line is not \"--- \" followed by a canonical 32-byte MAC") }
            return mac
        }

        /// One line without its LF, charged with its LF to the header's `budget`. CR is not a line
        /// ending in the header (it fails `isVisible` later).
        private static func readLine(_ source: BufferedSource, _ budget: inout Int) throws -> [UInt8] {
            let read: [UInt8]?
            do {
                read = try source.readLine(maximumLength: maximumLineLength)
            } catch is BufferedSource.LineTooLong {
                throw AgeError.malformedHeader("a header line is longer than \(maximumLineLength) bytes")
            }
            guard let line = read else { throw AgeError.malformedHeader("the file ends inside the header") }
            budget -= line.count + 1
            guard budget >= 0 else { throw AgeError.malformedHeader("the header is longer than \(maximumHeaderBytes) bytes") }
            return line
        }

        /// VCHAR: printable ASCII other than space.
        static func isVisible(_ c: UInt8) -> Bool { (0x21...0x7e).contains(c) }
    }
}
