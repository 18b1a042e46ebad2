import AgeEncryption
import CZlib
import Crypto
import Foundation
import SFTestSupport
import Testing

/// One vector of the CCTV age testkit (Tests/Vectors/age; format in its README).
struct TestkitVector: Sendable, CustomStringConvertible {
    enum Expectation: String, Sendable {
        case success, noMatch = "no match", hmacFailure = "HMAC failure", headerFailure = "header failure"
        case payloadFailure = "payload failure", armorFailure = "armor failure"
    }

    let name: String
    let expect: Expectation
    let payloadSHA256: String?
    let identities: [String]
    let passphrases: [String]
    let armored: Bool
    let fileKey: String?
    /// The age file (inflated when the vector is compressed).
    let file: Data

    var description: String { name }

    /// The vector names in the testkit folder, sorted; empty when the vectors are absent.
    static let names: [String] = {
        guard let dir = TestSupport.vectorsDirectory?.appendingPathComponent("age"),
            let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path)
        else { return [] }
        // README.md and LICENSE are the testkit's documentation, not vectors.
        return names.filter { !$0.hasSuffix(".md") && !$0.hasPrefix(".") && $0 != "LICENSE" }.sorted()
    }()

    static func load(_ name: String) throws -> TestkitVector {
        let raw = try #require(try TestSupport.vector("age/\(name)"))
        let separator = try #require(raw.firstRange(of: Data("\n\n".utf8)))
        let headerText = String(decoding: raw[..<separator.lowerBound], as: UTF8.self)
        var fields = [String: [String]]()
        for line in headerText.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: CharacterSet.whitespaces) }
            fields[parts[0], default: []].append(parts.count > 1 ? parts[1] : "")
        }
        var file = Data(raw[separator.upperBound...])
        if fields["compressed"]?.first == "zlib" { file = try inflate(file) }
        return TestkitVector(
            name: name,
            expect: try #require(Expectation(rawValue: fields["expect"]?.first ?? "")),
            payloadSHA256: fields["payload"]?.first,
            identities: fields["identity"] ?? [],
            passphrases: fields["passphrase"] ?? [],
            armored: fields["armored"]?.first == "yes",
            fileKey: fields["file key"]?.first,
            file: file)
    }

    /// zlib inflate through the system library (the testkit compresses its large vectors).
    static func inflate(_ input: Data) throws -> Data {
        var stream = z_stream()
        guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw CocoaError(.fileReadCorruptFile)
        }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var input = [UInt8](input)
        var status: Int32 = Z_OK
        input.withUnsafeMutableBufferPointer { inBuffer in
            stream.next_in = inBuffer.baseAddress
            stream.avail_in = uInt(inBuffer.count)
            repeat {
                chunk.withUnsafeMutableBufferPointer { outBuffer in
                    stream.next_out = outBuffer.baseAddress
                    stream.avail_out = uInt(outBuffer.count)
                    status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    output.append(outBuffer.baseAddress!, count: outBuffer.count - Int(stream.avail_out))
                }
            } while status == Z_OK
        }
        guard status == Z_STREAM_END else { throw CocoaError(.fileReadCorruptFile) }
        return output
    }
}
