import Foundation
import SecureCore

/// A live, independent program a test runs against (an interoperability peer or a tool the test
/// drives). Tests that need one declare it with a Swift Testing condition trait, so that a missing
/// peer is reported as SKIPPED by the runner rather than passing silently:
///
///     // Live peer: OpenSSL reads what we write.
///     @Test(.enabled(if: TestSupport.peerAvailable(.openssl), "needs openssl"))
///
/// Under `CI=true` the condition is always true: the test runs, and fails loudly when the peer is
/// missing (`.ci/run` installs every peer listed here).
public enum Peer: String, Sendable, CaseIterable, CustomStringConvertible {
    /// The `openssl` command (OpenSSL 3).
    case openssl
    /// The reference `age` command.
    case age
    /// The reference `age-keygen` command.
    case ageKeygen = "age-keygen"
    /// OpenSSH's `ssh-keygen`.
    case sshKeygen = "ssh-keygen"
    /// The `sqlite3` shell.
    case sqlite3
    /// util-linux `setsid` (runs a child without a controlling terminal).
    case setsid
    /// util-linux `unshare`, able to make a private mount namespace (root), for tests that mount a
    /// read-only view of a directory that only they see.
    case unshare
    /// `python3` with pyca `cryptography`.
    case pythonCryptography = "python3 cryptography"
    /// `python3` with pyca `cryptography` 47 or later (its `hpke` module).
    case pythonHPKE = "python3 cryptography.hazmat.primitives.hpke"
    /// `python3` with `pyrage` (rage's Python bindings).
    case pyrage = "python3 pyrage"
    /// A PostgreSQL server named by `SF_TEST_POSTGRES_URL` (with its password in the file
    /// `SF_TEST_POSTGRES_PASSWORD_FILE` or in `PGPASSWORD`): the SecureRecords PostgreSQL tests.
    case postgres = "PostgreSQL server (SF_TEST_POSTGRES_URL)"
    /// The PgBouncer connection pooler, run in front of that server by the test as the `postgres`
    /// user (so the tests must run as root, with `runuser`).
    case pgbouncer

    /// The peer's name as shown in skip and failure messages.
    public var description: String { rawValue }

    /// The executable the peer is run as (looked up on `PATH`).
    public var executable: String {
        switch self {
        case .pythonCryptography, .pythonHPKE, .pyrage: "python3"
        case .postgres: "psql"
        default: rawValue
        }
    }

    /// The Python module that must import, for the Python peers.
    var pythonModule: String? {
        switch self {
        case .pythonCryptography: "cryptography"
        case .pythonHPKE: "cryptography.hazmat.primitives.hpke"
        case .pyrage: "pyrage"
        default: nil
        }
    }

    /// How to install the peer (as `.ci/run` does).
    public var installHint: String {
        switch self {
        case .openssl: "apt-get install openssl"
        case .age, .ageKeygen: "apt-get install age"
        case .sshKeygen: "apt-get install openssh-client"
        case .sqlite3: "apt-get install sqlite3"
        case .setsid: "apt-get install util-linux"
        case .unshare: "apt-get install util-linux, and run as root"
        case .pythonCryptography: "python3 -m pip install cryptography"
        case .pythonHPKE: "python3 -m pip install -U 'cryptography>=47'"
        case .pyrage: "python3 -m pip install pyrage"
        case .pgbouncer: "apt-get install pgbouncer, and run as root"
        case .postgres:
            "export SF_TEST_POSTGRES_URL=$(scripts/postgres-test-cluster.sh start /tmp/sf-pg) "
                + "SF_TEST_POSTGRES_PASSWORD_FILE=/tmp/sf-pg/password "
                + "SF_TEST_POSTGRES_CA_FILE=/tmp/sf-pg/ca.pem (apt-get install postgresql-15)"
        }
    }

    /// True when the peer is installed here: the executable is on `PATH` and, for a Python peer,
    /// its module imports. Probed once per process.
    public var isInstalled: Bool { Self.installed[self] ?? false }

    private static let installed: [Peer: Bool] = {
        var result = [Peer: Bool]()
        for peer in allCases {
            if peer == .postgres {
                result[peer] = TestSupport.postgresURL != nil
                continue
            }
            guard let path = TestSupport.which(peer.executable) else {
                result[peer] = false
                continue
            }
            if let module = peer.pythonModule {
                result[peer] = (try? TestSupport.run(path, ["-c", "import \(module)"]))?.status == 0
            } else if peer == .unshare {
                result[peer] = (try? TestSupport.run(path, ["-m", "--", "true"]))?.status == 0
            } else if peer == .pgbouncer {
                result[peer] = getuid() == 0 && TestSupport.which("runuser") != nil && getpwnam("postgres") != nil
            } else {
                result[peer] = true
            }
        }
        return result
    }()
}

extension TestSupport {
    /// The condition for a test that needs live `peers`: true when all are installed, and always
    /// true under CI (`CI=true`), so that there the test runs and fails if a peer is missing.
    /// Use it in `.enabled(if:)` so a missing peer shows as skipped.
    public static func peerAvailable(_ peers: Peer...) -> Bool {
        isCI || peers.allSatisfy(\.isInstalled)
    }

    /// The condition for a test that reads published vectors: true when `vectorsDirectory` exists,
    /// and always true under CI (where missing vectors fail the test).
    public static var vectorsAvailable: Bool { isCI || vectorsDirectory != nil }

    /// The condition for a test that runs the built `sf` binary: true when it was built alongside
    /// the tests (`swift build --build-tests -Xcc -O2`), and always true under CI.
    public static var sfBinaryAvailable: Bool { isCI || sfBinary != nil }

    /// The path of `peer`'s executable, or a thrown `PeerMissing` naming it and how to install it
    /// (reached only when a test runs without its peer, that is under CI).
    public static func path(of peer: Peer) throws -> String {
        guard peer.isInstalled, let path = which(peer.executable) else { throw PeerMissing(peer: peer) }
        return path
    }
}

extension TestSupport {
    /// The test PostgreSQL server's URL (`SF_TEST_POSTGRES_URL`, `postgres://user@127.0.0.1:port/db`), or nil.
    public static var postgresURL: String? {
        guard let url = ProcessInfo.processInfo.environment["SF_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }

    /// The PEM CA certificate the test server's TLS certificate chains to (`SF_TEST_POSTGRES_CA_FILE`), or nil.
    public static var postgresCAFile: String? {
        guard let file = ProcessInfo.processInfo.environment["SF_TEST_POSTGRES_CA_FILE"], !file.isEmpty else { return nil }
        return file
    }

    /// The test server's password: the first line of `SF_TEST_POSTGRES_PASSWORD_FILE`, else
    /// `PGPASSWORD`, else nil (trust authentication).
    public static var postgresPassword: String? {
        let environment = ProcessInfo.processInfo.environment
        if let file = environment["SF_TEST_POSTGRES_PASSWORD_FILE"], !file.isEmpty, let secret = try? SecretFile.read(path: file) {
            return secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }
        return environment["PGPASSWORD"]
    }
}

/// Thrown when a test needs a peer that is not installed; the message says how to install it.
public struct PeerMissing: Error, CustomStringConvertible, Sendable {
    /// The missing peer.
    public let peer: Peer

    /// The error for `peer`.
    public init(peer: Peer) { self.peer = peer }

    /// A sentence naming the peer and its install command.
    public var description: String { "peer \(peer) is not installed (\(peer.installHint))" }
}

#if canImport(Testing)
import Testing

extension Trait where Self == ConditionTrait {
    /// A condition trait for a test that needs live `peers`: the test is reported as skipped (with
    /// the peers' install commands) when one is missing, and always runs under CI, where a missing
    /// peer then fails it. Same condition as `TestSupport.peerAvailable`.
    public static func requires(_ peers: Peer...) -> Self {
        let names = peers.map { "\($0) (\($0.installHint))" }.joined(separator: ", ")
        return .enabled(if: peers.allSatisfy(\.isInstalled) || TestSupport.isCI, Comment(rawValue: "live peer missing: \(names)"))
    }

    /// A condition trait for a test that reads the published vectors (Tests/Vectors, or
    /// `$SF_TEST_VECTORS`): skipped when they are absent, always run (and then failing) under CI.
    public static var requiresVectors: Self {
        .enabled(if: TestSupport.vectorsAvailable, Comment(rawValue: TestSupport.vectorsMissingReason))
    }

    /// A condition trait for a test that runs the `sf` binary built with the tests: skipped when it
    /// is absent, always run (and then failing) under CI.
    public static var requiresSFBinary: Self {
        .enabled(if: TestSupport.sfBinaryAvailable, "needs the sf binary (swift build --build-tests -Xcc -O2)")
    }
}

extension Trait where Self == TimeLimitTrait {
    /// The time limit of a test that waits on sockets, processes or the event loop: a backstop
    /// against a hang, never a performance bound (every wait inside has its own deadline).
    /// Forty-five minutes, because on a loaded two-core machine a test may wait minutes for a
    /// thread while other tests hold them (observed under `stress-ng --cpu 4`: README example 6, a
    /// loopback echo of milliseconds, ran past a five-minute limit; in CI's whole-suite run most
    /// tests report 400 to 550 s and the slowest 18 minutes), and the README shell test takes 4
    /// minutes idle and about three times that loaded. A hang still ends well within CI's limit.
    public static var hangBackstop: Self { .timeLimit(.minutes(45)) }
}
#endif
