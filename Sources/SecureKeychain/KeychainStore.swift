#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import SQLiteSupport

/// The keychain file: creates it (0600, in a 0700 directory when the directory is new), sets WAL
/// mode and full durability, migrates the schema forward, and reads and writes item rows.
/// The schema is documented in docs/FORMATS.md ("SecureKeychain file").
final class KeychainStore {
    /// `PRAGMA application_id`: "SFKC". Marks the file as a keychain.
    static let applicationID: Int64 = 0x5346_4B43
    /// The schema version this code writes; older files are migrated forward on open.
    static let schemaVersion: Int64 = 1

    /// Schema migrations: entry `n - 1` turns version `n - 1` into version `n`.
    private static let migrations: [String] = [
        """
        CREATE TABLE items (
            class        INTEGER NOT NULL,
            access_group TEXT    NOT NULL,
            service      TEXT    NOT NULL,
            account      TEXT    NOT NULL,
            label        TEXT,
            comment      TEXT,
            generic      BLOB,
            created      REAL    NOT NULL,
            modified     REAL    NOT NULL,
            sealed       INTEGER NOT NULL CHECK (sealed IN (0, 1)),
            value        BLOB    NOT NULL,
            PRIMARY KEY (class, access_group, service, account)
        ) WITHOUT ROWID;
        """,
    ]

    let connection: SQLiteConnection
    /// True when the file could not be opened for writing (see `isWritable`): reads work, writes
    /// are refused with `KeychainError.readOnly` before they reach SQLite.
    let isReadOnly: Bool

    /// Opens the keychain at `path`. With `readOnly`, or when this process cannot write the file or
    /// its directory, nothing is ever written: no file or directory is created, no mode narrowed, no
    /// journal mode switched, no schema migrated; a missing file or an empty SQLite database reads as
    /// an empty keychain (served from memory), and a file that would need a migration is refused.
    convenience init(path: String, busyTimeoutMilliseconds: Int32, readOnly: Bool = false) throws(KeychainError) {
        if readOnly {
            var status = stat()
            guard stat(path, &status) == 0 else {
                guard errno == ENOENT else { throw .invalidLocation("cannot open \(path): \(String(cString: strerror(errno)))") }
                try self.init(opening: nil, displayPath: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds, readOnly: true)
                return
            }
            try Self.checkExistingFile(path, status)
        } else {
            try Self.prepareFile(path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        }
        try self.init(
            opening: path, displayPath: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds,
            readOnly: readOnly || !Self.isWritable(path))
    }

    /// Whether this process can write the keychain: the file, and its directory (where SQLite
    /// makes the `-wal` and `-shm` files).
    private static func isWritable(_ path: String) -> Bool {
        let directory = (path as NSString).deletingLastPathComponent
        return access(path, W_OK) == 0 && access(directory.isEmpty ? "." : directory, W_OK) == 0
    }

    /// Opens the file at `path` (nil: no file, read-only) after deciding, without writing, what it
    /// holds: another application's database and a newer keychain are refused before anything is
    /// written to them (switching to WAL rewrites the file header).
    private init(opening path: String?, displayPath: String, busyTimeoutMilliseconds: Int32, readOnly: Bool) throws(KeychainError) {
        isReadOnly = readOnly
        let file = try Self.sql { () throws(SQLiteError) -> SQLiteConnection? in
            guard let path else { return nil }
            return readOnly
                ? try SQLiteConnection(readingOnly: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
                : try SQLiteConnection(path: path, create: true, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        }
        let contents = try file.map { (file) throws(KeychainError) in try Self.contents(of: file) } ?? .empty
        if readOnly {
            switch contents {
            case .keychain(version: Self.schemaVersion):
                connection = file!
            case .empty:
                // Nothing to read, and nothing may be written: an empty keychain served from memory.
                connection = try Self.sql { () throws(SQLiteError) in
                    try SQLiteConnection(path: ":memory:", create: true, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
                }
                try migrate()
            case .keychain:
                throw .readOnly(path: displayPath, reason: "it needs a schema upgrade, which writes to it")
            }
            return
        }
        connection = file!
        // WAL and synchronous = FULL, as every store here: an acknowledged synchronize() survives power loss.
        try sql { (c) throws(SQLiteError) in try c.makeDurable(busyTimeoutMilliseconds: busyTimeoutMilliseconds) }
        // Freed content (deleted or replaced values) is overwritten with zeros, in the WAL frames
        // written from now on and, through checkpoints, in the database file.
        try sql { (c) throws(SQLiteError) in try c.execute("PRAGMA secure_delete = ON") }
        try migrate()
    }

    /// Creates the parent directory (0700) when missing, and a missing keychain file whole: built
    /// under a temporary name (0600, so SQLite gives its -wal and -shm files that mode too) and
    /// linked into place, so a keychain file is never empty. An existing file of 0 bytes was
    /// truncated and is refused (`corrupted`) rather than silently started afresh; an existing
    /// file readable or writable by group or others is narrowed to the owner (0600).
    private static func prepareFile(_ path: String, busyTimeoutMilliseconds: Int32) throws(KeychainError) {
        do throws(SQLiteError) {
            try SQLiteConnection.createPrivateDirectory(containing: path)
        } catch {
            throw .invalidLocation(error.message)
        }
        var status = stat()
        if stat(path, &status) != 0 {
            guard errno == ENOENT else { throw .invalidLocation("cannot open \(path): \(String(cString: strerror(errno)))") }
            try createWhole(path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            guard stat(path, &status) == 0 else { throw .invalidLocation("cannot open \(path): \(String(cString: strerror(errno)))") }
        }
        try checkExistingFile(path, status)
        if status.st_mode & 0o077 != 0, status.st_uid == geteuid(), access(path, W_OK) == 0 {
            for file in [path, path + "-wal", path + "-shm"] { chmod(file, 0o600) }
        }
    }

    /// Refuses an existing path that is not a regular file, or a file of 0 bytes (truncated: it is
    /// refused as `corrupted` rather than silently started afresh).
    private static func checkExistingFile(_ path: String, _ status: stat) throws(KeychainError) {
        guard status.st_mode & S_IFMT == S_IFREG else { throw .invalidLocation("\(path) is not a regular file") }
        guard status.st_size > 0 else {
            throw .corrupted(
                path: path,
                details: "the file is empty (0 bytes), so it was truncated; restore it from a backup, or remove it to start a new keychain")
        }
    }

    /// Builds a new keychain file under a temporary name and links it to `path` (never replacing
    /// a file another process created meanwhile).
    private static func createWhole(_ path: String, busyTimeoutMilliseconds: Int32) throws(KeychainError) {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().path + "/." + url.lastPathComponent + ".new-"
            + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        defer { for file in [temporary, temporary + "-wal", temporary + "-shm"] { unlink(file) } }
        let fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .invalidLocation("cannot create \(path): \(String(cString: strerror(errno)))") }
        close(fd)
        do {
            // Closing the connection (end of scope) checkpoints the WAL into the file.
            _ = try KeychainStore(opening: temporary, displayPath: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds, readOnly: false)
        }
        let synced = open(temporary, O_RDONLY | O_CLOEXEC)
        if synced >= 0 {
            _ = fsync(synced)
            close(synced)
        }
        guard link(temporary, path) == 0 || errno == EEXIST else {
            throw .invalidLocation("cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// What a database file holds, as far as opening it is concerned.
    enum Contents: Equatable {
        /// A SQLite database with no objects and no application id: a new keychain.
        case empty
        /// A keychain of this schema version (never newer than `schemaVersion`).
        case keychain(version: Int64)
    }

    /// What `connection`'s file holds, read without writing: `notAKeychain` for another
    /// application's database or one with the keychain's application id but no version table,
    /// `unsupportedSchemaVersion` for a keychain written by a newer version.
    private static func contents(of connection: SQLiteConnection) throws(KeychainError) -> Contents {
        let (applicationID, objects, hasVersionTable) = try sql { () throws(SQLiteError) in
            (
                try connection.integer("PRAGMA application_id"),
                try connection.integer("SELECT count(*) FROM sqlite_schema"),
                try connection.integer("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version'") == 1
            )
        }
        if applicationID == 0, objects == 0 { return .empty }
        guard applicationID == Self.applicationID, hasVersionTable else { throw .notAKeychain(path: connection.path) }
        let version = try sql { () throws(SQLiteError) in try connection.integer("SELECT version FROM schema_version") }
        guard version >= 0 else { throw .corrupted(path: connection.path, details: "schema version \(version)") }
        guard version <= Self.schemaVersion else { throw .unsupportedSchemaVersion(found: version, supported: Self.schemaVersion) }
        return .keychain(version: version)
    }

    /// The keychain's error for a SQLite failure: `corrupted` for a damaged file, else `storage`
    /// with SQLite's code and message.
    static func map(_ error: SQLiteError) -> KeychainError {
        if error.isCorruption { return .corrupted(path: error.path, details: error.message) }
        return .storage(path: error.path, code: error.code, message: error.message)
    }

    /// Runs SQLite calls, reporting their failures as `KeychainError.storage`.
    static func sql<R>(_ body: () throws(SQLiteError) -> R) throws(KeychainError) -> R {
        do throws(SQLiteError) {
            return try body()
        } catch {
            throw map(error)
        }
    }

    /// Runs SQLite calls on this store's connection, reporting failures as `KeychainError.storage`.
    func sql<R>(_ body: (SQLiteConnection) throws(SQLiteError) -> R) throws(KeychainError) -> R {
        try Self.sql { () throws(SQLiteError) in try body(connection) }
    }

    /// Runs `body` in one transaction (see `SQLiteConnection.transaction`).
    func transaction<R>(write: Bool, _ body: () throws(KeychainError) -> R) throws(KeychainError) -> R {
        try connection.transaction(write: write, mapError: Self.map, body)
    }

    /// See `SQLiteConnection.dataVersion()`.
    func dataVersion() throws(KeychainError) -> Int64 {
        try sql { (c) throws(SQLiteError) in try c.dataVersion() }
    }

    private func migrate() throws(KeychainError) {
        // The common case, a current file, needs no write lock.
        if try Self.contents(of: connection) == .keychain(version: Self.schemaVersion) { return }
        try transaction(write: true) { () throws(KeychainError) in
            // Decided again under the write lock: another process may have created or migrated it.
            var version: Int64 = 0
            switch try Self.contents(of: connection) {
            case .empty:
                try sql { (c) throws(SQLiteError) in
                    try c.execute("""
                        PRAGMA application_id = \(Self.applicationID);
                        CREATE TABLE schema_version (version INTEGER NOT NULL);
                        INSERT INTO schema_version VALUES (0);
                        """)
                }
            case .keychain(let found):
                version = found
            }
            try sql { (c) throws(SQLiteError) in
                for step in Int(version)..<Int(Self.schemaVersion) {
                    try c.execute(Self.migrations[step])
                }
                if version < Self.schemaVersion {
                    try c.execute("UPDATE schema_version SET version = \(Self.schemaVersion)")
                }
            }
        }
    }

    /// Every item in the file (call inside a transaction for a consistent snapshot).
    func loadItems() throws(KeychainError) -> ItemTable {
        try sql { (connection) throws(SQLiteError) in try loadItems(connection) }
    }

    private func loadItems(_ connection: SQLiteConnection) throws(SQLiteError) -> ItemTable {
        var items = ItemTable()
        holdsRowsUnderOtherNames = false
        let select = try connection.statement("""
            SELECT class, access_group, service, account, label, comment, generic, created, modified, sealed, value,
                typeof(class) = 'integer', typeof(access_group) = 'text' AND typeof(service) = 'text' AND typeof(account) = 'text'
            FROM items
            """)
        while try select.step() {
            // A class added by a newer library version, or not an integer at all (SQLite keeps 1.5,
            // '1x' or a blob in an INTEGER column, and would read each as 1): left untouched.
            guard select.int64(11) != 0, let rawClass = UInt8(exactly: select.int64(0)), let itemClass = KeychainItem.Class(rawValue: rawClass) else {
                continue
            }
            let identity = KeychainItem.Identity(
                itemClass, accessGroup: select.text(1), service: select.text(2), account: select.text(3))
            let item = StoredItem(
                attributes: .init(label: select.optionalText(4), comment: select.optionalText(5), genericData: select.optionalBlob(6)),
                created: select.double(7), modified: select.double(8), isSealed: select.int64(9) != 0,
                value: select.bytes(10))
            // Rows whose names are not stored as NFC text (other forms, other bytes, blobs) are read
            // as their NFC form. When one meets the row stored under exactly that form, the exact
            // row wins, whichever comes later in the file, so a row planted beside an item cannot
            // stand in for it.
            let exact = Self.namesStoredExactly(identity, select, firstNameColumn: 1, textColumn: 12)
            if !exact { holdsRowsUnderOtherNames = true }
            if let earlier = items.updateValue(item, for: identity), !exact {
                items.updateValue(earlier, for: identity)
            }
        }
        return items
    }

    /// Whether the file held, when last loaded, a row whose names are not text of exactly their
    /// NFC bytes (a row written by another implementation, an older version, or planted): then a
    /// change to its item must remove it too (see `removeRowsUnderOtherNames`).
    private var holdsRowsUnderOtherNames = false

    /// Whether the row at `select` stores `identity`'s names as text of their very bytes (its
    /// NFC, UTF-8): the names from `firstNameColumn` on (access group, service, account), and
    /// `textColumn` true when all three are text.
    private static func namesStoredExactly(
        _ identity: KeychainItem.Identity, _ select: SQLiteStatement, firstNameColumn: Int32, textColumn: Int32
    ) -> Bool {
        select.int64(textColumn) != 0 && select.bytes(firstNameColumn).elementsEqual(identity.accessGroup.utf8)
            && select.bytes(firstNameColumn + 1).elementsEqual(identity.service.utf8)
            && select.bytes(firstNameColumn + 2).elementsEqual(identity.account.utf8)
    }

    /// Deletes the rows that are read as one of `identities` but store its names otherwise (not
    /// NFC, or a blob): a change writes or deletes the NFC row only, and such a row left behind
    /// brought a deleted item back when the file was next loaded, and kept a replaced value on
    /// disk. ASCII names are always NFC, so only rows with another name are looked at.
    private func removeRowsUnderOtherNames(of identities: Set<KeychainItem.Identity>, _ connection: SQLiteConnection) throws(SQLiteError) {
        // GLOB stops at a NUL byte, so names holding one are looked at too.
        let select = try connection.statement("""
            SELECT class, access_group, service, account,
                typeof(access_group) = 'text' AND typeof(service) = 'text' AND typeof(account) = 'text',
                typeof(access_group) = 'text', typeof(service) = 'text', typeof(account) = 'text'
            FROM items
            WHERE typeof(class) = 'integer' AND (typeof(access_group) != 'text' OR typeof(service) != 'text' OR typeof(account) != 'text'
                OR access_group GLOB '*[^ -~]*' OR service GLOB '*[^ -~]*' OR account GLOB '*[^ -~]*'
                OR instr(CAST(access_group AS BLOB), x'00') > 0 OR instr(CAST(service AS BLOB), x'00') > 0
                OR instr(CAST(account AS BLOB), x'00') > 0)
            """)
        var stale = [(itemClass: Int64, names: [(isText: Bool, bytes: [UInt8])])]()
        while try select.step() {
            guard let rawClass = UInt8(exactly: select.int64(0)), let itemClass = KeychainItem.Class(rawValue: rawClass) else { continue }
            let identity = KeychainItem.Identity(itemClass, accessGroup: select.text(1), service: select.text(2), account: select.text(3))
            if identities.contains(identity), !Self.namesStoredExactly(identity, select, firstNameColumn: 1, textColumn: 4) {
                stale.append((select.int64(0), (1...3).map { (select.int64(Int32($0) + 4) != 0, select.bytes(Int32($0))) }))
            }
        }
        // The table has no rowid: a row is found again by its key, each name compared as the type
        // it is stored as (text never equals a blob in SQLite), so the primary key serves the
        // lookup and only that row goes.
        let delete = try connection.statement("""
            DELETE FROM items WHERE class = ?1
                AND access_group = (CASE ?2 WHEN 1 THEN CAST(?3 AS TEXT) ELSE ?3 END)
                AND service = (CASE ?4 WHEN 1 THEN CAST(?5 AS TEXT) ELSE ?5 END)
                AND account = (CASE ?6 WHEN 1 THEN CAST(?7 AS TEXT) ELSE ?7 END)
            """)
        for row in stale {
            delete.reset()
            delete.bind(1, row.itemClass)
            for (offset, name) in row.names.enumerated() {
                delete.bind(Int32(2 * offset + 2), Int64(name.isText ? 1 : 0))
                delete.bind(Int32(2 * offset + 3), name.bytes)
            }
            try delete.step()
        }
    }

    /// Writes `changes` (oldest first) inside the caller's write transaction. Only the last change
    /// to each item is written (coalescing), in primary-key order so the B-tree fills page by page.
    /// Rows stored under other spellings of a changed item's names go too, when the file held any
    /// at its last load or `fileChanged` since (another connection wrote it).
    func write(_ changes: [KeychainChange], fileChanged: Bool) throws(KeychainError) {
        try sql { (connection) throws(SQLiteError) in
            if holdsRowsUnderOtherNames || fileChanged {
                try removeRowsUnderOtherNames(of: Set(changes.map(\.identity)), connection)
            }
            try write(changes, connection)
        }
    }

    private func write(_ changes: [KeychainChange], _ connection: SQLiteConnection) throws(SQLiteError) {
        let order = changes.indices.sorted { i, j in
            let a = changes[i].identity, b = changes[j].identity
            if a.precedes(b) { return true }
            if b.precedes(a) { return false }
            return i < j
        }
        let upsert = try connection.statement("""
            INSERT OR REPLACE INTO items
                (class, access_group, service, account, label, comment, generic, created, modified, sealed, value)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            """)
        let delete = try connection.statement(
            "DELETE FROM items WHERE class = ?1 AND access_group = ?2 AND service = ?3 AND account = ?4")
        for (position, index) in order.enumerated() {
            let identity = changes[index].identity
            if position + 1 < order.count, changes[order[position + 1]].identity == identity { continue }  // superseded
            let change = changes[index].item
            let statement = change == nil ? delete : upsert
            statement.reset()
            statement.bind(1, Int64(identity.itemClass.rawValue))
            statement.bind(2, identity.accessGroup)
            statement.bind(3, identity.service)
            statement.bind(4, identity.account)
            if let item = change {
                statement.bind(5, item.attributes.label)
                statement.bind(6, item.attributes.comment)
                statement.bind(7, item.attributes.genericData)
                statement.bind(8, item.created)
                statement.bind(9, item.modified)
                statement.bind(10, Int64(item.isSealed ? 1 : 0))
                statement.bind(11, item.value)
            }
            try statement.step()
        }
    }

    /// Copies the WAL into the database file and truncates it to zero bytes (`wal_checkpoint(TRUNCATE)`),
    /// so frames holding freed values leave the disk. Best effort: while another connection reads an
    /// older snapshot the checkpoint cannot finish, and the next one that frees a value tries again.
    func checkpointDiscardingOldFrames() {
        _ = try? sql { (c) throws(SQLiteError) in try c.text("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// Runs `PRAGMA integrity_check` and throws `corrupted` unless it reports "ok".
    func checkIntegrity() throws(KeychainError) {
        let report = try sql { (c) throws(SQLiteError) in try c.text("PRAGMA integrity_check") }
        guard report == "ok" else { throw .corrupted(path: connection.path, details: report) }
    }
}
