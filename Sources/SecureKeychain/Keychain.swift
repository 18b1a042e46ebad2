import Foundation

/// A file keychain: items after Keychain Services kept in one SQLite file the application owns.
///
/// Reads are served from memory and see every earlier mutation of this instance at once. Mutations
/// are persisted by a background writer in batched transactions (or per call in immediate mode);
/// `synchronize()` returns once everything before it is durable, and `close()` flushes. Other
/// processes' synchronized changes to the same file become visible at the next `synchronize()`, and
/// to a read once the view is older than the poll interval (that read first checks the file). No
/// thread wakes while the keychain is idle. All methods are thread-safe.
public final class Keychain: Sendable {
    /// How writes reach the file, and how long to wait on other processes.
    public struct Configuration: Sendable {
        /// Coalesced (the default): a batch is written this long after its first change.
        public var writeDelay: Duration = .milliseconds(10)
        /// Coalesced: a batch is written at once when it holds this many changed items.
        public var maximumBatch: Int = 16_384
        /// Immediate mode: each mutation returns only once it is durable (write-through).
        public var isImmediate = false
        /// How long a write waits for another process's lock before retrying.
        public var busyTimeout: Duration = .seconds(5)
        /// How many times a write retries after the busy timeout before failing.
        public var busyRetries = 5
        /// How old the view may be before a read, or a change when none is being written, first
        /// checks the file for other processes' changes (a `PRAGMA data_version`, reloading only
        /// when it changed).
        public var pollInterval: Duration = .milliseconds(250)

        /// Opens the file for reading only, for commands and apps that must never change it: no
        /// file or directory is created, no permission narrowed, no journal mode switched, no
        /// schema migrated. A missing file or an empty SQLite database reads as an empty keychain
        /// (and nothing is created); a keychain that would need a migration is refused with
        /// `readOnly`. Every change throws `readOnly`. A file without a `-wal` is read as a
        /// snapshot. A `Vault` on such a keychain cannot record failed attempts (see `Vault`).
        public var isReadOnly = false

        /// The default: coalesced writes after 10 ms or 16,384 items.
        public init() {}

        /// Reading only (see `isReadOnly`).
        public static var readOnly: Configuration {
            var configuration = Configuration()
            configuration.isReadOnly = true
            return configuration
        }

        /// Write-through: every mutation is durable when it returns.
        public static var immediate: Configuration {
            var configuration = Configuration()
            configuration.isImmediate = true
            return configuration
        }

        var delayNanoseconds: UInt64 { Self.nanoseconds(writeDelay) }
        var pollNanoseconds: UInt64 { Self.nanoseconds(pollInterval) }
        var busyTimeoutMilliseconds: Int32 { Int32(clamping: Self.nanoseconds(busyTimeout) / 1_000_000) }

        /// `duration` in nanoseconds, from 0 (a negative one) to Int64.max, about 292 years (a
        /// longer one, such as `.seconds(Int64.max)` for "never", trapped): a monotonic clock's
        /// reading plus it cannot overflow.
        private static func nanoseconds(_ duration: Duration) -> UInt64 {
            let (seconds, attoseconds) = duration.components
            guard seconds >= 0 else { return 0 }
            let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
            let nanoseconds = whole.addingReportingOverflow(UInt64(max(0, attoseconds / 1_000_000_000)))
            guard !overflow, !nanoseconds.overflow else { return UInt64(Int64.max) }
            return min(nanoseconds.partialValue, UInt64(Int64.max))
        }
    }

    /// The keychain file.
    public var path: String { engine.path }

    /// True when the keychain was opened with `Configuration.readOnly`, or when the file (or its
    /// directory) is not writable by this process, for example on a read-only file system: every
    /// change throws `KeychainError.readOnly` without touching the file.
    public var isReadOnly: Bool { engine.state.withLock { $0.isReadOnly } }
    let engine: KeychainEngine

    /// Opens (creating when missing, unless `configuration.isReadOnly`) the keychain at `path`. A
    /// new file gets mode 0600 and a new directory 0700. Throws `notAKeychain`,
    /// `unsupportedSchemaVersion` or `storage` when the file cannot be used; such a file is refused
    /// before anything is written to it.
    public init(path: String, configuration: Configuration = Configuration()) throws(KeychainError) {
        engine = try KeychainEngine(path: path, configuration: configuration)
    }

    /// Opens the keychain at the default location (`defaultPath()`).
    public convenience init(configuration: Configuration = Configuration()) throws(KeychainError) {
        try self.init(path: try Self.defaultPath(), configuration: configuration)
    }

    deinit { try? engine.close() }

    /// `$SF_HOME/keychain.db`; else `$XDG_DATA_HOME/securefoundation/keychain.db`; else
    /// `~/.local/share/securefoundation/keychain.db`.
    public static func defaultPath(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(KeychainError) -> String {
        if let home = environment["SF_HOME"], !home.isEmpty { return home + "/keychain.db" }
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/securefoundation/keychain.db" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.local/share/securefoundation/keychain.db" }
        throw .invalidLocation("set SF_HOME, XDG_DATA_HOME or HOME")
    }

    // MARK: Items

    /// Adds an item; throws `duplicateItem` when one with the same identity exists.
    public func add(
        _ value: Data, for identity: KeychainItem.Identity, attributes: KeychainItem.Attributes = .init()
    ) throws(KeychainError) {
        try add(value, for: identity, attributes: attributes, isSealed: false)
    }

    func add(
        _ value: Data, for identity: KeychainItem.Identity, attributes: KeychainItem.Attributes, isSealed: Bool
    ) throws(KeychainError) {
        try Self.refuseInternal(identity)
        let now = Date().timeIntervalSince1970
        let stored = StoredItem(attributes: attributes, created: now, modified: now, isSealed: isSealed, value: Array(value))
        try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            guard s.items[identity] == nil else {
                throw .duplicateItem(service: identity.service, account: identity.account)
            }
            s.record(identity, stored)
        }
    }

    /// Adds the item, or replaces the value of an existing one (keeping its creation date and, when
    /// `attributes` is nil, its attributes).
    func upsert(
        _ value: Data, for identity: KeychainItem.Identity, attributes: KeychainItem.Attributes?, isSealed: Bool
    ) throws(KeychainError) {
        try upsert(Array(value), for: identity, attributes: attributes, isSealed: isSealed)
    }

    func upsert(
        _ bytes: [UInt8], for identity: KeychainItem.Identity, attributes: KeychainItem.Attributes?, isSealed: Bool
    ) throws(KeychainError) {
        let now = Date().timeIntervalSince1970
        try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            s.record(identity) { existing in
                StoredItem(
                    attributes: attributes ?? existing?.attributes ?? .init(), created: existing?.created ?? now,
                    modified: now, isSealed: isSealed, value: bytes)
            }
        }
    }

    /// Sets the value (when given; the item becomes clear) and/or the attributes (when given) of
    /// every item matching `query`, and updates their modification dates. Returns how many changed;
    /// throws `itemNotFound` when none match. A new value for a sealed item throws
    /// `protectionMismatch` and changes nothing, unless `changingProtection` is true (the caller's
    /// explicit request to store the value in clear). Internal items are refused or left out, as
    /// for `delete`.
    @discardableResult
    public func update(
        _ query: KeychainQuery, value: Data? = nil, attributes: KeychainItem.Attributes? = nil,
        changingProtection: Bool = false
    ) throws(KeychainError) -> Int {
        try Self.refuseInternal(query)
        let now = Date().timeIntervalSince1970
        let bytes = value.map(Array.init)
        return try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            let matches = Self.withoutInternal(s.items.identities(matching: query), query: query)
            guard !matches.isEmpty else { throw query.notFound }
            if bytes != nil, !changingProtection,
                let sealed = matches.first(where: { s.items[$0]?.isSealed == true })
            {
                throw .protectionMismatch(service: sealed.service, account: sealed.account, isSealed: true)
            }
            for identity in matches {
                guard var item = s.items[identity] else { continue }
                if let bytes {
                    item.value = bytes
                    item.isSealed = false
                }
                if let attributes { item.attributes = attributes }
                item.modified = now
                s.record(identity, item)
            }
            return matches.count
        }
    }

    /// Deletes every item matching `query` (up to its limit). Returns how many; throws
    /// `itemNotFound` when none match. SecureFoundation's internal items are never deleted: a
    /// query naming their service throws `internalItem`, a broader one leaves them out.
    @discardableResult
    public func delete(_ query: KeychainQuery) throws(KeychainError) -> Int {
        try Self.refuseInternal(query)
        return try engine.mutate { (s: inout KeychainEngine.State) throws(KeychainError) in
            let matches = Self.withoutInternal(s.items.identities(matching: query), query: query)
            guard !matches.isEmpty else { throw query.notFound }
            for identity in matches { s.record(identity, nil) }
            return matches.count
        }
    }

    /// The item with `identity`; throws `itemNotFound` when absent.
    public func item(_ identity: KeychainItem.Identity) throws(KeychainError) -> KeychainItem {
        guard let stored = engine.read({ $0.items[identity] }) else {
            throw .itemNotFound(service: identity.service, account: identity.account)
        }
        return stored.item(identity)
    }

    /// The items matching `query`, ordered by access group, service and account, at most `limit`.
    /// SecureFoundation's internal items appear only when `query` names their service.
    public func items(matching query: KeychainQuery) -> [KeychainItem] {
        engine.read { s in
            Self.withoutInternal(s.items.identities(matching: query), query: query).compactMap { identity in
                s.items[identity]?.item(identity)
            }
        }
    }

    // MARK: Durability

    /// Returns once every mutation made before the call is durable in the file, and the view
    /// includes other processes' changes synchronized before it. Throws the write's error otherwise.
    public func synchronize() async throws(KeychainError) {
        let outcome: KeychainError? = await withCheckedContinuation { continuation in
            engine.synchronize { continuation.resume(returning: $0) }
        }
        if let outcome { throw outcome }
    }

    /// The blocking form of `synchronize()`, for synchronous code.
    public func synchronizeBlocking() throws(KeychainError) {
        try engine.synchronize()
    }

    /// Flushes every pending mutation and closes the file. Later mutations throw `closed`; reads
    /// keep answering from memory. Closing twice does nothing.
    public func close() throws(KeychainError) {
        try engine.close()
    }

    /// Opens the file at `path` on its own and runs SQLite's full integrity check; throws
    /// `corrupted` when it reports problems.
    public static func checkIntegrity(path: String) throws(KeychainError) {
        guard FileManager.default.fileExists(atPath: path) else { throw .invalidLocation("\(path) does not exist") }
        let store = try KeychainStore(path: path, busyTimeoutMilliseconds: 5_000, readOnly: true)
        try store.checkIntegrity()
    }
}
