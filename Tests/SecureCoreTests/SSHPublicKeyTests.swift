import Foundation
import SFTestSupport
import SecureCore
import Testing

/// The SSH public key codec (`SSHPublicKey`): lines and blobs written by `ssh-keygen` (OpenSSH 9),
/// the key type taken from the blob, and typed errors for every malformed input.
@Suite struct SSHPublicKeyTests {
    // Written by `ssh-keygen -t ed25519 / -t ecdsa / -t rsa -b 2048` (OpenSSH 9).
    static let ed25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB+t5yVMshsboY3WyGQ55aKQVcCarj3fa/LikciZSIj9 c"
    static let ecdsa = """
        ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBATw50PJ04l1ZJ+7Cxzomi1xNM2XIG2Gsw5raQmzVwDzTY1fv1FU2rrVx0RXURFxuSGa46V9nSZw1Hne29Xmwsg= root@vm
        """
    static let rsa = """
        ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC+d9GjRdXDta72xIm0UzVQXBwJWi+f4z6oBqfL0oylAK6nb6miHnQYnfTVOIs0gGFrUrSx5b6jXecKG8E7lpog4SW+2I2xd+gNk3qRInVMJZNUtEBUZAK2ZPomzqeulkC3vVRBG7NnnYWQu1ZEfvRllNwDKLXF+4G24hXReURjy7at1GpXij26UY+6PkMjcso9JXshjdIa2IJ2q+QFQ3MxlhYka7sNFpc6bMvbmrSUydqETuGn5X+5iyyzXtM7KjYDrwPUS7KWIPC670nFCp34badZvx2xSybLRHXzC1E4Pj7jLgwEAHkQuFUuZW8fWnJbX6HFpmg9xFz6koTinBWP root@vm
        """

    /// The blob of an ssh-ed25519 key with the 32-byte encoding `point`.
    static func ed25519Blob(_ point: Data) -> Data {
        var writer = SSHWireWriter()
        writer.string("ssh-ed25519")
        writer.string(point)
        return writer.bytes
    }

    static func blob(of line: String) throws -> Data { try Base64.decode(String(line.split(separator: " ")[1])) }

    /// The codec's error from `body`; nil when it succeeds (any other error fails the test).
    static func error(_ body: () throws -> Void) -> SSHPublicKeyError? {
        do {
            try body()
            return nil
        } catch let error as SSHPublicKeyError {
            return error
        } catch {
            Issue.record("not an SSHPublicKeyError: \(error)")
            return nil
        }
    }

    @Test(arguments: [ed25519, ecdsa, rsa])
    func sshKeygenLinesRoundTrip(line: String) throws {
        let key = try SSHPublicKey(line: line)
        #expect(key.line == line)
        #expect(key.label == key.keyType)
        #expect(key.blob == (try Self.blob(of: line)))
        #expect(try SSHPublicKey(blob: key.blob).key == key.key)
        #expect(try SSHPublicKey(key.key, comment: key.comment).line == line)
    }

    @Test func fieldsAreRead() throws {
        let ed = try SSHPublicKey(line: Self.ed25519)
        #expect(ed.key == .ed25519(Data(try Self.blob(of: Self.ed25519).suffix(32))))
        #expect(ed.comment == "c")
        guard case .rsa(let exponent, let modulus) = try SSHPublicKey(line: Self.rsa).key else { Issue.record("not RSA"); return }
        #expect(exponent == Data([1, 0, 1]) && modulus.count == 256 && modulus.first! >= 0x80)
        guard case .ecdsa(let curve, let point) = try SSHPublicKey(line: Self.ecdsa).key else { Issue.record("not ECDSA"); return }
        #expect(curve == .nistp256 && point.count == 65 && point.first == 4)
    }

    @Test func keyTypeComesFromTheBlobNotTheLabel() throws {
        let blob = Base64.encode(try Self.blob(of: Self.ed25519))
        for label in ["ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "anything"] {
            let key = try SSHPublicKey(line: "\(label) \(blob) a comment")
            #expect(key.keyType == "ssh-ed25519")
            #expect(key.label == label)
            #expect(key.line == "ssh-ed25519 \(blob) a comment")
        }
    }

    @Test func blanksAndComments() throws {
        let blob = Base64.encode(try Self.blob(of: Self.ed25519))
        #expect(try SSHPublicKey(line: "ssh-ed25519\t\(blob)").comment == nil)
        #expect(try SSHPublicKey(line: "  ssh-ed25519  \(blob)  \n").comment == nil)
        #expect(try SSHPublicKey(line: "ssh-ed25519 \(blob) \t two  words \r\n").comment == "two  words")
    }

    @Test func malformedLinesAreTyped() throws {
        let blob = Base64.encode(try Self.blob(of: Self.ed25519))
        #expect(Self.error { _ = try SSHPublicKey(line: "") } == .malformedLine)
        #expect(Self.error { _ = try SSHPublicKey(line: "ssh-ed25519") } == .malformedLine)
        #expect(Self.error { _ = try SSHPublicKey(line: blob) } == .malformedLine)
        #expect(Self.error { _ = try SSHPublicKey(line: "ssh-ed25519 \(blob.dropLast())") } == .malformedBase64)
        #expect(Self.error { _ = try SSHPublicKey(line: "ssh-ed25519 !\(blob)") } == .malformedBase64)
    }

    @Test(arguments: [ed25519, ecdsa, rsa])
    func everyTruncationAndExtensionIsRejected(line: String) throws {
        let blob = try Self.blob(of: line)
        for length in 0..<blob.count {
            #expect(Self.error { _ = try SSHPublicKey(blob: blob.prefix(length)) } == .truncated, "prefix \(length)")
        }
        #expect(Self.error { _ = try SSHPublicKey(blob: blob + Data([0])) } == .trailingBytes)
    }

    @Test func unsupportedAndInconsistentBlobs() {
        var dss = SSHWireWriter()
        dss.string("ssh-dss")
        #expect(Self.error { _ = try SSHPublicKey(blob: dss.bytes) } == .unsupportedKeyType("ssh-dss"))
        var curve = SSHWireWriter()
        curve.string("ecdsa-sha2-nistp256")
        curve.string("nistp384")
        curve.string(Data([4]))
        #expect(Self.error { _ = try SSHPublicKey(blob: curve.bytes) } == .curveMismatch(keyType: "ecdsa-sha2-nistp256", curve: "nistp384"))
        var negative = SSHWireWriter()
        negative.string("ssh-rsa")
        negative.string(Data([0x81]))
        negative.string(Data([0x00, 0xc1]))
        #expect(Self.error { _ = try SSHPublicKey(blob: negative.bytes) } == .negativeInteger)
        #expect(Self.error { _ = try SSHPublicKey(blob: Self.ed25519Blob(Data(count: 31))) }
            == .wrongKeyLength(keyType: "ssh-ed25519", expected: 32, found: 31))
        var offCurve = SSHWireWriter()
        offCurve.string("ecdsa-sha2-nistp256")
        offCurve.string("nistp256")
        offCurve.string(Data([4] + [UInt8](repeating: 1, count: 64)))
        #expect(Self.error { _ = try SSHPublicKey(blob: offCurve.bytes) } == .invalidECDSAPoint(curve: "nistp256"))
        #expect(Self.error { _ = try SSHPublicKey(.rsa(exponent: Data([0, 1]), modulus: Data([0xc1]))) } == .nonMinimalInteger)
    }

    @Test func ed25519PointsAreChecked() {
        let cases: [(Data, SSHPublicKeyError.Ed25519PointDefect)] = [
            (TestSupport.ed25519Encoding(y: [2, 0, 0, 0]), .notOnCurve),
            (TestSupport.ed25519Encoding(y: Edwards25519Tests.pPlusThree), .nonCanonicalY),
            (TestSupport.ed25519Encoding(y: Edwards25519Tests.pMinusOne, sign: 1), .signedZeroX),
        ] + TestSupport.ed25519SmallOrderPoints.map { ($0, .smallOrder) }
        for (point, defect) in cases {
            let line = "ssh-ed25519 \(Base64.encode(Self.ed25519Blob(point)))"
            #expect(Self.error { _ = try SSHPublicKey(line: line) } == .invalidEd25519Point(defect))
            #expect(Self.error { _ = try SSHPublicKey(.ed25519(point)) } == .invalidEd25519Point(defect))
        }
        #expect(throws: Never.self) { try SSHPublicKey(.ed25519(TestSupport.ed25519Encoding(y: [3, 0, 0, 0]))) }
    }

    @Test func writerEncodesMPIntsMinimally() {
        var writer = SSHWireWriter()
        writer.unsignedMPInt(Data([0, 0, 0x80]))
        writer.unsignedMPInt(Data([0x7f]))
        writer.unsignedMPInt(Data([0]))
        #expect(writer.bytes == Data([0, 0, 0, 2, 0, 0x80, 0, 0, 0, 1, 0x7f, 0, 0, 0, 0]))
    }
}
