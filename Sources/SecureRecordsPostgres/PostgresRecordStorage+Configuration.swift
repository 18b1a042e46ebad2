#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif
import Foundation
import SecureCore
import SecureRecords

extension PostgresRecordStorage {
    /// How to reach the server and where the store's tables live.
    public struct Configuration: Sendable {
        /// Transport security of the connection.
        public enum TLS: Sendable, Hashable {
            /// Off when the host is, or resolves only to, loopback addresses (`127.0.0.1`, `::1`,
            /// `localhost`; see `loopbackAddress`), required (with certificate and host name
            /// verification against the system's roots) everywhere else.
            case automatic
            /// No TLS. Only sensible on loopback or a trusted private link.
            case disabled
            /// TLS required, the server certificate verified against the system's roots, or
            /// against the PEM certificates in `caFile` when given, and checked to name the host
            /// (libpq's `verify-full`).
            case required(caFile: String? = nil)
            /// TLS required, the server certificate verified against the PEM certificates in
            /// `caFile`, but not checked to name the host (libpq's `verify-ca`): for a team CA whose
            /// certificates name another host, say. `caFile` is required (the storage refuses nil):
            /// against the system's roots, any certificate for any domain would pass.
            case verifyCA(caFile: String? = nil)
        }

        /// The server's host name or address.
        public var host: String
        /// The server's TCP port.
        public var port: Int
        /// The PostgreSQL user.
        public var user: String
        /// The database (default: the user's name).
        public var database: String?
        /// The user's password, or nil (trust or peer authentication). Kept as `SecretBytes`; it is
        /// converted to a `String` only while connecting, as postgres-nio takes it so.
        public var password: SecretBytes?
        /// Transport security (default: off on loopback, required elsewhere).
        public var tls: TLS
        /// The PostgreSQL schema holding the tables (created if missing). Lowercase letters, digits and `_`.
        public var schema: String
        /// Prepended to every table and index name, so several stores can share one schema.
        /// Lowercase letters, digits and `_`, at most 32 characters, may be empty.
        public var tablePrefix: String
        /// How long connecting may take (TCP, TLS, startup and authentication, retries while the
        /// server restarts) before it fails. URL: `connect_timeout` (seconds). Default 10.
        public var connectTimeoutSeconds: Int
        /// How long one statement may take: sent to the server as its `statement_timeout` (it then
        /// cancels the statement, SQLSTATE 57014, a final error). A server that does not answer is
        /// given two seconds more (or a tenth more, if longer), then the client closes the connection
        /// and the transaction runs again on a new one. URL: `statement_timeout` (milliseconds, as
        /// PostgreSQL's setting). Default 30 s.
        public var statementTimeoutSeconds: Double
        /// How long one transaction may take, its retries on a new connection included; for an
        /// import (one transaction, as long as its input), how long it may go without a statement
        /// completing. URL: `transaction_timeout` (milliseconds, as PostgreSQL 17's setting; not
        /// sent to the server). Default 60 s.
        public var transactionTimeoutSeconds: Double
        /// How many connections the storage opens at most: each transaction holds one for its whole
        /// run, so this many calls from different threads run at once, and a call beyond them waits
        /// for a connection within its transaction deadline. Connections are opened when first
        /// needed and kept open. URL: `pool_size`. Default 8.
        public var maximumConnections: Int

        /// A configuration; nothing is checked until the storage connects.
        public init(
            host: String = "127.0.0.1", port: Int = 5432, user: String, database: String? = nil, password: SecretBytes? = nil,
            tls: TLS = .automatic, schema: String = "public", tablePrefix: String = "sfr_", connectTimeoutSeconds: Int = 10,
            statementTimeoutSeconds: Double = 30, transactionTimeoutSeconds: Double = 60, maximumConnections: Int = 8
        ) {
            self.host = host
            self.port = port
            self.user = user
            self.database = database
            self.password = password
            self.tls = tls
            self.schema = schema
            self.tablePrefix = tablePrefix
            self.connectTimeoutSeconds = connectTimeoutSeconds
            self.statementTimeoutSeconds = statementTimeoutSeconds
            self.transactionTimeoutSeconds = transactionTimeoutSeconds
            self.maximumConnections = maximumConnections
        }

        /// Parses `postgres://user@host:port/database?schema=S&prefix=P&sslmode=disable|require|verify-ca|verify-full&sslrootcert=PATH`
        /// `&connect_timeout=SECONDS&statement_timeout=MILLISECONDS&transaction_timeout=MILLISECONDS&pool_size=N`
        /// (`postgresql://` too; port, database and parameters optional). `sslrootcert` names a PEM
        /// file of CA certificates to verify the server against (a team's private CA), as in libpq;
        /// it implies TLS and cannot go with `sslmode=disable`. A URL that carries a
        /// password is refused (`RecordsError.storage`, cause `.invalidConfiguration`): passwords come
        /// from `password` (a file or the environment), never from a command line.
        public init(url text: String, password: SecretBytes? = nil) throws(RecordsError) {
            guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
                scheme == "postgres" || scheme == "postgresql"
            else { throw invalidConfiguration("the PostgreSQL URL must look like postgres://user@host:port/database") }
            guard url.password == nil, url.percentEncodedPassword == nil else {
                throw invalidConfiguration(
                    "the PostgreSQL URL contains a password; remove it and give the password in a file "
                        + "(--postgres-password-file) or the PGPASSWORD environment variable")
            }
            guard let user = url.user, !user.isEmpty else { throw invalidConfiguration("the PostgreSQL URL names no user (postgres://user@host/db)") }
            guard var host = url.host, !host.isEmpty else { throw invalidConfiguration("the PostgreSQL URL names no host") }
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
            self.init(host: host, port: url.port ?? 5432, user: user, database: database.isEmpty ? nil : database, password: password)
            var rootCertificates: String?
            for item in url.queryItems ?? [] {
                switch (item.name, item.value ?? "") {
                case ("schema", let value): schema = value
                case ("prefix", let value): tablePrefix = value
                case ("sslmode", "disable"): tls = .disabled
                case ("sslmode", "require"), ("sslmode", "verify-full"): tls = .required()
                case ("sslmode", "verify-ca"): tls = .verifyCA()
                case ("sslmode", let mode):
                    throw invalidConfiguration(
                        "sslmode=\(mode) is not supported: use verify-full (the default off loopback), verify-ca, require "
                            + "(here as verify-full) or disable" + (["prefer", "allow"].contains(mode) ? " (prefer and allow fall back to clear text)" : ""))
                case ("sslrootcert", let path) where !path.isEmpty: rootCertificates = path
                case ("connect_timeout", let value):
                    guard let seconds = Int(value), (1...3600).contains(seconds) else {
                        throw invalidConfiguration("connect_timeout is a number of seconds from 1 to 3600")
                    }
                    connectTimeoutSeconds = seconds
                case ("statement_timeout", let value):
                    guard let milliseconds = Int(value), (1...86_400_000).contains(milliseconds) else {
                        throw invalidConfiguration("statement_timeout is a number of milliseconds from 1 to 86400000")
                    }
                    statementTimeoutSeconds = Double(milliseconds) / 1000
                case ("transaction_timeout", let value):
                    guard let milliseconds = Int(value), (1...86_400_000).contains(milliseconds) else {
                        throw invalidConfiguration("transaction_timeout is a number of milliseconds from 1 to 86400000")
                    }
                    transactionTimeoutSeconds = Double(milliseconds) / 1000
                case ("pool_size", let value):
                    guard let count = Int(value), (1...1000).contains(count) else {
                        throw invalidConfiguration("pool_size is a number of connections from 1 to 1000")
                    }
                    maximumConnections = count
                default:
                    throw invalidConfiguration(
                        "the PostgreSQL URL parameter '\(item.name)' is not supported "
                            + "(schema, prefix, sslmode, sslrootcert, connect_timeout, statement_timeout, transaction_timeout, pool_size)")
                }
            }
            if let rootCertificates {
                guard tls != .disabled else {
                    throw invalidConfiguration("the PostgreSQL URL says sslmode=disable and sslrootcert: a CA file needs TLS")
                }
                if case .verifyCA = tls { tls = .verifyCA(caFile: rootCertificates) } else { tls = .required(caFile: rootCertificates) }
            }
        }

        /// Whether `host` is, or resolves only to, loopback addresses (see `loopbackAddress`).
        public var isLoopback: Bool { loopbackAddress != nil }

        /// The address to connect to when `host` is a loopback address (127.0.0.0/8, ::1) or a name
        /// that resolves only to loopback addresses; nil otherwise, and when it does not resolve.
        /// Decided by the resolved address, not by the text: `127.db.example` resolving to a remote
        /// server is not loopback (so TLS stays required). A caller that skips TLS connects to the
        /// returned address itself, so a second resolution cannot send it elsewhere.
        public var loopbackAddress: String? { Self.loopbackAddresses(ofHost: host)?.first }

        /// Every address `host` resolves to, in the resolver's order, when they are all loopback
        /// addresses; nil otherwise (`localhost` is often `::1` then `127.0.0.1`: a connection
        /// tries each in turn, as libpq does).
        static func loopbackAddresses(ofHost host: String) -> [String]? {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
            defer { freeaddrinfo(list) }
            var addresses: [String] = []
            var entry: UnsafeMutablePointer<addrinfo>? = first
            while let current = entry {
                guard let address = Self.loopbackText(current.pointee) else { return nil }
                if !addresses.contains(address) { addresses.append(address) }
                entry = current.pointee.ai_next
            }
            return addresses
        }

        /// The numeric text of `entry`'s address when it is a loopback address; nil otherwise.
        private static func loopbackText(_ entry: addrinfo) -> String? {
            guard let socketAddress = entry.ai_addr else { return nil }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            switch entry.ai_family {
            case AF_INET:
                var address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                guard UInt32(bigEndian: address.s_addr) >> 24 == 127,
                    inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil
                else { return nil }
            case AF_INET6:
                var address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                let bytes = withUnsafeBytes(of: address) { Array($0) }
                guard bytes == [UInt8](repeating: 0, count: 15) + [1],
                    inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil
                else { return nil }
            default:
                return nil
            }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }

        /// Where the server is, for messages (never the password).
        public var displayName: String { "PostgreSQL \(user)@\(host):\(port)/\(database ?? user)" }

        /// Whether `name` is a lowercase letter or `_`, then lowercase letters, digits or `_`: a
        /// name that needs no escaping between double quotes (and no quoting to keep its case).
        static func isPlainIdentifier(_ name: String) -> Bool {
            !name.isEmpty && name.unicodeScalars.enumerated().allSatisfy { index, c in
                ("a"..."z").contains(c) || c == "_" || (index > 0 && ("0"..."9").contains(c))
            }
        }

        /// Checks the schema and prefix are plain identifiers.
        func validate() throws(RecordsError) {
            func plain(_ s: String, _ maximum: Int, allowEmpty: Bool) -> Bool {
                s.utf8.count <= maximum && (s.isEmpty ? allowEmpty : Self.isPlainIdentifier(s))
            }
            guard plain(schema, 63, allowEmpty: false) else {
                throw invalidConfiguration("the PostgreSQL schema name '\(schema)' must be 1...63 lowercase letters, digits or _")
            }
            guard plain(tablePrefix, 32, allowEmpty: true) else {
                throw invalidConfiguration("the table prefix '\(tablePrefix)' must be at most 32 lowercase letters, digits or _")
            }
            guard (1...65_535).contains(port) else { throw invalidConfiguration("the PostgreSQL port \(port) is out of range") }
            guard (1...1000).contains(maximumConnections) else {
                throw invalidConfiguration("the connection pool size \(maximumConnections) is out of range (1 to 1000)")
            }
            if case .verifyCA(nil) = tls {
                throw invalidConfiguration(
                    "sslmode=verify-ca needs the CA to verify against: sslrootcert=PATH in the URL (or sf records --postgres-ca-file PATH); "
                        + "against the system's CAs, without the host name, any certificate would do")
            }
            // The URL's ranges: a statement deadline that rounds to 0 ms would turn the server's
            // statement_timeout off, and one past Int64 milliseconds cannot be sent.
            guard (1...3600).contains(connectTimeoutSeconds) else {
                throw invalidConfiguration("the connect timeout \(connectTimeoutSeconds) s is out of range (1 to 3600 s)")
            }
            for (name, seconds) in [("statement", statementTimeoutSeconds), ("transaction", transactionTimeoutSeconds)] {
                guard (0.001...86_400).contains(seconds) else {
                    throw invalidConfiguration("the \(name) timeout \(seconds) s is out of range (0.001 to 86400 s)")
                }
            }
        }
    }
}

/// A configuration the storage refuses before contacting anything.
private func invalidConfiguration(_ message: String) -> RecordsError {
    .storage(StorageFailure(.invalidConfiguration, message))
}
