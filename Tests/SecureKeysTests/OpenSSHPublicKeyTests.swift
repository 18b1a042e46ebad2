import Foundation
import SFTestSupport
import SecureCore
import SecureKeys
import Testing

/// OpenSSH public key lines in SecureKeys, through SecureCore's `SSHPublicKey` codec: lines written
/// by `ssh-keygen` import and export back, the label must match the blob (as `ssh-keygen -l`
/// requires), and ssh-ed25519 keys that are not valid curve points are refused as `sshKey` with the codec's defect.
@Suite struct OpenSSHPublicKeyTests {
    // Written by `ssh-keygen -t ed25519 -C c` (OpenSSH 9).
    static let blob = "AAAAC3NzaC1lZDI1NTE5AAAAIB+t5yVMshsboY3WyGQ55aKQVcCarj3fa/LikciZSIj9"

    /// An ssh-ed25519 line whose key is the 32-byte little-endian `y` with the sign bit `sign`.
    static func ed25519Line(y: [UInt64], sign: UInt8 = 0) -> String {
        TestSupport.sshEd25519Line(TestSupport.ed25519Encoding(y: y, sign: sign))
    }

    @Test func sshKeygenLineImportsAndExports() throws {
        let key = try KeyImport.publicKey(from: Data("ssh-ed25519 \(Self.blob) c\n".utf8))
        #expect(try key.exported(as: .openssh) == Data("ssh-ed25519 \(Self.blob)\n".utf8))
        #expect(key.openSSHFingerprint == "SHA256:m4NvhDmLCAxVIRV/m+hy0LcNbfAO/gHVNFQQI82OuX4")  // ssh-keygen -l
        // Tabs separate fields too, as in OpenSSH.
        #expect(try KeyImport.publicKey(from: Data("ssh-ed25519\t\(Self.blob)\tc".utf8)).spkiDERRepresentation == key.spkiDERRepresentation)
    }

    @Test func labelMustMatchTheBlob() {
        // ssh-keygen -l refuses such a line ("is not a public key file"); age accepts it (AgeEncryption).
        #expect(keyError { _ = try KeyImport.publicKey(from: Data("ssh-rsa \(Self.blob)".utf8)) }
            == .malformedOpenSSH("key type in the blob differs from the line"))
    }

    @Test func ed25519PointsOffTheCurveAreRefused() {
        let p = TestSupport.ed25519Prime
        let cases: [(String, SSHPublicKeyError.Ed25519PointDefect)] = [
            (Self.ed25519Line(y: [2, 0, 0, 0]), .notOnCurve),
            (Self.ed25519Line(y: [p[0] + 3, p[1], p[2], p[3]]), .nonCanonicalY),
            (Self.ed25519Line(y: [p[0] - 1, p[1], p[2], p[3]], sign: 1), .signedZeroX),
        ]
        for (line, defect) in cases {
            #expect(keyError { _ = try KeyImport.publicKey(from: Data(line.utf8)) }
                == .sshKey(.invalidEd25519Point(defect)), "\(line)")
        }
        #expect(throws: Never.self) { try KeyImport.publicKey(from: Data(Self.ed25519Line(y: [3, 0, 0, 0]).utf8)) }
    }
}
