import ArgumentParser
import Foundation
import Synchronization
import SecureFoundation
import SecureRecordsPostgres

/// `sf records`: records with clear searchable fields and sealed fields (SecureRecords).
struct RecordsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "records",
        abstract: "Keep records whose clear fields are searchable and whose sealed fields are encrypted.",
        discussion: """
            A collection's schema (which fields are clear, sealed, or sealed with a blind index) is declared by \
            --schema or by the first add (--field: clear, --sealed: sealed, --indexed: sealed+blindIndex). Sealed \
            fields are keyed by the record's own password (--password-file or a prompt) or by the store key, \
            unlocked with the vault (--vault) or an application key file (--key-file, 32 bytes or 64 hex digits).
            """,
        subcommands: [
            RecordsAddCommand.self, RecordsListCommand.self, RecordsSearchCommand.self, RecordsShowCommand.self, RecordsGetCommand.self,
            RecordsUpdateCommand.self, RecordsDeleteCommand.self, RecordsExportCommand.self, RecordsImportCommand.self,
            RecordsChangePasswordCommand.self, RecordsRotateKeyCommand.self, RecordsRewrapCommand.self, RecordsStatusCommand.self,
        ]
    )
}

/// The store: a file (`--store`, default `records.db` beside the keychain) or a PostgreSQL
/// database (`--postgres URL`, its password from `--postgres-password-file` or `PGPASSWORD`).
struct RecordsStoreOption: ParsableArguments {
    @Option(help: "Record store file (default: records.db beside the keychain).") var store: String?
    @Option(help: ArgumentHelp(
        "A shared store in PostgreSQL: postgres://user@host:port/database[?schema=S&prefix=P&sslmode=require].",
        discussion: "The URL must not hold a password: give it with --postgres-password-file or PGPASSWORD."))
    var postgres: String?
    @Option(help: "File whose first line is the PostgreSQL password (default: the PGPASSWORD environment variable).")
    var postgresPasswordFile: String?
    @Option(help: "PEM file of the CA certificates to verify the PostgreSQL server against (a private CA; as sslrootcert=PATH in the URL, which then must name the same file). Implies TLS.")
    var postgresCaFile: String?

    func validate() throws {
        guard store == nil || postgres == nil else { throw ValidationError("give --store or --postgres, not both") }
        guard postgresPasswordFile == nil || postgres != nil else { throw ValidationError("--postgres-password-file needs --postgres") }
        guard postgresCaFile == nil || postgres != nil else { throw ValidationError("--postgres-ca-file needs --postgres") }
    }

    /// The PostgreSQL storage, when --postgres was given; its tables are made only when `creating`.
    func postgresStorage(creating: Bool = true) throws -> PostgresRecordStorage? {
        guard let postgres else { return nil }
        var password: SecretBytes?
        if let postgresPasswordFile {
            password = try Terminal.readSecret(fromFile: postgresPasswordFile)
        } else if let environment = ProcessInfo.processInfo.environment["PGPASSWORD"] {
            password = SecretBytes(Data(environment.utf8))
        }
        var configuration = try PostgresRecordStorage.Configuration(url: postgres, password: password)
        if let postgresCaFile {
            guard configuration.tls != .disabled else { throw CLIError("--postgres-ca-file needs TLS, but the URL says sslmode=disable") }
            let named: String? = switch configuration.tls {
            case .required(let caFile), .verifyCA(let caFile): caFile
            default: nil
            }
            // Neither silently wins: verifying against a CA other than the one meant is refused.
            if let named, named != postgresCaFile, !Terminal.isSameFile(named, postgresCaFile) {
                throw CLIError("the URL's sslrootcert=\(named) and --postgres-ca-file \(postgresCaFile) name different files: give one")
            }
            if case .verifyCA = configuration.tls {
                configuration.tls = .verifyCA(caFile: postgresCaFile)
            } else {
                configuration.tls = .required(caFile: postgresCaFile)
            }
        }
        return try PostgresRecordStorage(configuration: configuration, creatingTables: creating)
    }

    /// Where the store is, for people: the PostgreSQL URL (which holds no password), or the store
    /// file's absolute path.
    func description() throws -> String {
        if let postgres { return postgres }
        return URL(fileURLWithPath: try path()).standardizedFileURL.path
    }

    /// The store file's path (without --postgres).
    func path() throws -> String {
        try store ?? ((Keychain.defaultPath() as NSString).deletingLastPathComponent + "/records.db")
    }

    /// Opens the store. A store file, or PostgreSQL tables, that do not exist are made only when
    /// `creating` (`records add`; `records import` makes its own), so a command given a mistyped
    /// path, schema or prefix fails instead of leaving an empty store there.
    func open(kdf: PasswordKDF = .default, batchSize: Int = 256, creating: Bool = false) throws -> RecordStore {
        let configuration = RecordStore.Configuration(passwordKDF: kdf, rotationBatchSize: batchSize)
        if let storage = try postgresStorage(creating: creating) { return try RecordStore(storage: storage, configuration: configuration) }
        let path = try path()
        let isNew = !FileManager.default.fileExists(atPath: path)
        if isNew, !creating { throw CLIError("no records store at \(path) (sf records add or sf records import makes one)") }
        let store = try RecordStore(path: path, configuration: configuration)
        if isNew { NewStoreFile.created(path) }
        return store
    }
}

/// A store file this command created: a command that fails leaves none behind (removed at exit,
/// unless another process has put a collection in it meanwhile).
enum NewStoreFile {
    private static let path = Mutex<String?>(nil)

    static func created(_ newPath: String) { path.withLock { $0 = newPath } }

    /// Removes the file created by this command (and SQLite's files beside it) if it is still empty.
    static func removeAfterFailure() {
        guard let created = path.withLock({ $0 }) else { return }
        guard let store = try? RecordStore(path: created), (try? store.collections().isEmpty) == true else { return }
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: created + suffix) }
    }
}

/// The scrypt cost of new password seals: one range for every command that seals, from
/// `PasswordKDF.minimumScryptLogN` to the readers' ceiling (`KDFLimits.default`), so nothing is
/// written that is too cheap to guess or that a reader refuses.
struct ScryptCostOption: ParsableArguments {
    @Option(help: "scrypt log2(N) for password seals (default 17; \(PasswordKDF.minimumScryptLogN)...\(KDFLimits.default.maxScryptLogN)).")
    var scryptLogN: UInt8 = 17

    func validate() throws {
        let range = PasswordKDF.minimumScryptLogN...KDFLimits.default.maxScryptLogN
        guard range.contains(scryptLogN) else { throw ValidationError("--scrypt-log-n must be \(range.lowerBound)...\(range.upperBound)") }
    }

    /// The KDF for new seals.
    var kdf: PasswordKDF { .scrypt(logN: scryptLogN, r: 8, p: 1) }
}

/// Which key seals or opens sealed fields.
struct RecordsKeyOptions: ParsableArguments {
    @Option(help: "File whose first line is the record's password (default: prompt when a password is needed).")
    var passwordFile: String?
    @Flag(help: "Use the store key, unlocked with the vault (needs the vault passcode).") var vault = false
    @Option(help: "Use the store key, unlocked with this application key file (32 bytes, or 64 hex digits).")
    var keyFile: String?
    @OptionGroup var keychain: KeychainLocation
    @OptionGroup var passcode: VaultPasscodeOption

    var usesStoreKey: Bool { vault || keyFile != nil }

    func validate() throws {
        guard !(vault && keyFile != nil) else { throw ValidationError("give --vault or --key-file, not both") }
        guard !(usesStoreKey && passwordFile != nil) else {
            throw ValidationError("--password-file is for password records; --vault and --key-file for the store key")
        }
    }

    /// The store key's sealer: the application key file, or the unlocked vault (with its keychain,
    /// for `finish`); nil without --vault or --key-file.
    func storeKeySealer() throws -> StoreKeySealer? {
        if let keyFile { return StoreKeySealer(sealer: try KeyItemSealer(key: try SymmetricKeyFile.read(path: keyFile)), vault: nil) }
        guard vault else { return nil }
        let keychain = try keychain.open()
        let vault = try passcode.unlockedVault(keychain)
        return StoreKeySealer(sealer: vault, vault: vault)
    }

    /// Unlocks the store key when --vault or --key-file was given. Returns false otherwise.
    @discardableResult
    func unlockIfRequested(_ store: RecordStore, at location: RecordsStoreOption) throws -> Bool {
        guard let sealer = try storeKeySealer() else { return false }
        try store.unlock(with: sealer.sealer)
        try sealer.finish(store, at: location)
        return true
    }

    /// The record password: the file's first line, else a prompt without echo (twice when `confirm`).
    func password(confirm: Bool, prompt: String = "Record password: ") throws -> SecretBytes {
        try Terminal.secret(file: passwordFile, prompt: prompt, confirm: confirm, option: "--password-file")
    }
}

/// What wraps a store's keys, as `--vault` or `--key-file` chose it.
struct StoreKeySealer {
    let sealer: any ItemSealer
    /// The vault, when it is the sealer.
    let vault: Vault?

    /// Done with the store: the vault records which of its application keys now wrap this store's
    /// keys (so `sf vault retire-key` refuses one still in use, and `rotate` names the store), and
    /// its keychain is closed.
    func finish(_ store: RecordStore, at location: RecordsStoreOption) throws {
        guard let vault else { return }
        let keyIds = try store.wrappedKeys().keys.compactMap { Vault.applicationKeyId(ofSealed: $0.wrapped) }
        try vault.noteHolder(Vault.Holder(id: "records:" + Hex.encode(store.storeId), location: try location.description(), keyIds: keyIds))
        try vault.keychain.close()
    }
}

/// `name=value` field arguments.
enum RecordsArguments {
    static func split(_ argument: String, option: String) throws -> (String, String) {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
            throw ValidationError("\(option) expects name=value, got '\(argument)'")
        }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    /// A value: text, or `base64:...` for bytes (`FieldValue`'s own syntax).
    static func value(_ text: String) throws -> FieldValue {
        guard let value = FieldValue(text) else { throw ValidationError("invalid base64 value") }
        return value
    }

    static func id(_ text: String) throws -> UUID {
        guard let id = UUID(uuidString: text) else { throw ValidationError("'\(text)' is not a record id (UUID)") }
        return id
    }

    /// `name=clear|sealed|sealed+blindIndex,...`
    static func schema(_ text: String) throws -> RecordSchema {
        var fields: [String: FieldProtection] = [:]
        for part in text.split(separator: ",") {
            let (name, kind) = try split(String(part), option: "--schema")
            guard let protection = FieldProtection(rawValue: kind) else {
                throw ValidationError("--schema: '\(kind)' is not clear, sealed or sealed+blindIndex")
            }
            fields[name] = protection
        }
        return try RecordSchema(fields)
    }
}

/// Field values given to add and update.
struct RecordsFieldOptions: ParsableArguments {
    /// The largest value `--field-file` and `--sealed-file` read: records are held and sealed in
    /// memory, whole.
    static let maximumFileValueBytes = 64 << 20

    @Option(name: .customLong("field"), help: "A clear field, name=value (value 'base64:...' for bytes). Repeatable.")
    var clear: [String] = []
    @Option(
        name: .customLong("field-file"),
        help: "A clear text field whose value is a file's text less one final line ending (at most 64 MiB), name=PATH; PATH - is standard input. Repeatable.")
    var clearFiles: [String] = []
    @Option(name: .customLong("sealed"), help: "A sealed field, name=value. Repeatable. The value is data, not a secret.")
    var sealed: [String] = []
    @Option(
        name: .customLong("sealed-file"),
        help: "A sealed field whose value is the bytes of a file (at most 64 MiB), name=PATH; PATH - is standard input. Repeatable.")
    var sealedFiles: [String] = []
    @Option(name: .customLong("indexed"), help: "A sealed field with a blind index (store key only), name=value. Repeatable.")
    var indexed: [String] = []

    func validate() throws {
        let fromStandardInput = (clearFiles + sealedFiles).filter { $0.hasSuffix("=-") }
        guard fromStandardInput.count <= 1 else {
            throw ValidationError("only one --field-file or --sealed-file can read standard input (-): \(fromStandardInput.joined(separator: ", "))")
        }
    }

    /// The bytes of `path` (`-`: standard input), refused past `maximumFileValueBytes` as soon as
    /// the reading gets there (a 3 GB file died with SIGILL while it was read whole).
    static func readValue(_ path: String) throws -> Data {
        let input = path == "-" ? try Terminal.standardInput(for: "a record value") : try FileInput(path: path)
        do throws(SecureCoreError) {
            return try input.readToEnd(limit: maximumFileValueBytes)
        } catch .inputTooLarge {
            throw CLIError("\(input.path): input too large (a record value from a file is at most \(maximumFileValueBytes >> 20) MiB)")
        }
    }

    /// The text of `path` (`-`: standard input) less one final line ending, for a clear field.
    static func readText(_ path: String, field: String) throws -> String {
        let bytes = Terminal.droppingFinalLineEnding(try readValue(path))
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CLIError("\(path == "-" ? "standard input" : path): not UTF-8 text; give bytes as --field \(field)=base64:...")
        }
        return text
    }

    /// The values, and the schema they imply for a new collection.
    func read() throws -> (fields: [String: FieldValue], implied: [String: FieldProtection]) {
        var fields: [String: FieldValue] = [:]
        var implied: [String: FieldProtection] = [:]
        func put(_ name: String, _ value: FieldValue, _ protection: FieldProtection) throws {
            guard fields[name] == nil else { throw ValidationError("field '\(name)' given twice") }
            fields[name] = value
            implied[name] = protection
        }
        for argument in clear {
            let (name, text) = try RecordsArguments.split(argument, option: "--field")
            try put(name, try RecordsArguments.value(text), .clear)
        }
        for argument in clearFiles {
            let (name, path) = try RecordsArguments.split(argument, option: "--field-file")
            try put(name, .string(try Self.readText(path, field: name)), .clear)
        }
        for argument in sealed {
            let (name, text) = try RecordsArguments.split(argument, option: "--sealed")
            try put(name, try RecordsArguments.value(text), .sealed)
        }
        for argument in sealedFiles {
            let (name, path) = try RecordsArguments.split(argument, option: "--sealed-file")
            try put(name, .bytes(try Self.readValue(path)), .sealed)
        }
        for argument in indexed {
            let (name, text) = try RecordsArguments.split(argument, option: "--indexed")
            try put(name, try RecordsArguments.value(text), .sealedIndexed)
        }
        return (fields, implied)
    }

    /// Checks each value was given with the option matching the stored schema.
    static func check(_ implied: [String: FieldProtection], against schema: RecordSchema, collection: String) throws {
        for (name, protection) in implied {
            guard let declared = schema.fields[name] else { throw RecordsError.unknownField(collection: collection, field: name) }
            let sealedGiven = protection != .clear
            guard sealedGiven == declared.isSealed else {
                throw RecordsError.fieldProtectionMismatch(
                    collection: collection, field: name,
                    reason: declared.isSealed ? "declared sealed: give it with --sealed or --indexed" : "declared clear: give it with --field")
            }
        }
    }
}

/// Prints records: one line each (list, search) or a block (show).
enum RecordsOutput {
    /// What wraps a store key, read from its wrapped form without opening it.
    static func wrapping(_ key: WrappedStoreKey) -> String {
        guard let applicationKey = Vault.applicationKeyId(ofSealed: key.wrapped) else { return "wrapped by an application key file" }
        return "wrapped by the vault's application key \(applicationKey)"
    }

    static func format(_ value: FieldValue) -> String { value.description }

    /// A field in `--json`: `{"name": ..., "text": ...}` or `{"name": ..., "base64": ...}`. (An
    /// array of these, not an object keyed by name: the JSON keys are snake_cased, names must not be.)
    struct Field: Encodable {
        let name: String
        let text: String?
        let base64: String?

        init(_ name: String, _ value: FieldValue) {
            self.name = name
            switch value {
            case .string(let string): (text, base64) = (string, nil)
            case .bytes(let bytes): (text, base64) = (nil, bytes.base64EncodedString())
            }
        }

        static func list(_ fields: [String: FieldValue]) -> [Field] {
            fields.sorted { $0.key < $1.key }.map { Field($0.key, $0.value) }
        }
    }

    /// A record in `--json`: its clear fields, the names of its sealed fields, and those opened.
    struct RecordJSON: Encodable {
        let id: String
        let collection: String
        let keying: String
        let clearFields: [Field]
        let sealedFields: [String]
        let openedFields: [Field]

        init(_ record: Record) {
            id = record.id.uuidString.lowercased()
            collection = record.collection
            keying = record.keying == .password ? "password" : "store_key"
            clearFields = Field.list(record.clearFields)
            sealedFields = record.sealedFieldNames.sorted()
            openedFields = Field.list(record.openedFields)
        }
    }

    /// Records as lines (tab-separated), or as one JSON array.
    static func print(_ records: [Record], json: Bool) throws {
        if json { return try JSONOutput.print(records.map(RecordJSON.init)) }
        for record in records { Swift.print(line(record)) }
    }

    /// A record on one line, tab-separated. Stored text is escaped (`Terminal.printable`): others
    /// may write a shared store, and a control character in a name or value could otherwise rewrite
    /// the terminal, or a tab or newline fake columns and records.
    static func line(_ record: Record) -> String {
        var parts = [record.id.uuidString.lowercased(), Terminal.printable(record.collection)]
        for (name, value) in record.clearFields.sorted(by: { $0.key < $1.key }) { parts.append("\(Terminal.printable(name))=\(printable(value))") }
        for name in record.sealedFieldNames { parts.append("\(Terminal.printable(name))=<sealed>") }
        return parts.joined(separator: "\t")
    }

    /// A record as one `name: value` line per field, its text escaped as in `line`.
    static func block(_ record: Record) -> String {
        var lines = [
            "id: \(record.id.uuidString.lowercased())", "collection: \(Terminal.printable(record.collection))",
            "keying: \(record.keying == .password ? "password" : "store key")",
        ]
        for (name, value) in record.clearFields.sorted(by: { $0.key < $1.key }) { lines.append("\(Terminal.printable(name)): \(printable(value))") }
        for name in record.sealedFieldNames {
            lines.append("\(Terminal.printable(name)): \(record.openedFields[name].map(printable) ?? "<sealed>")")
        }
        return lines.joined(separator: "\n")
    }

    private static func printable(_ value: FieldValue) -> String { Terminal.printable(format(value)) }
}

struct RecordsAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a record and print its id.")

    @OptionGroup var location: RecordsStoreOption
    @Option(help: "Collection (default: default).") var collection = "default"
    @Option(help: "Declare the collection's schema: name=clear|sealed|sealed+blindIndex,... (default: from the fields given).")
    var schema: String?
    @OptionGroup var fieldOptions: RecordsFieldOptions
    @OptionGroup var keys: RecordsKeyOptions
    @OptionGroup var scrypt: ScryptCostOption
    @Option(help: .hidden) var repeatCount: Int = 1

    func run() throws {
        let (fields, implied) = try fieldOptions.read()
        guard !fields.isEmpty else { throw ValidationError("give at least one --field, --field-file, --sealed, --sealed-file or --indexed") }
        let store = try location.open(kdf: scrypt.kdf, creating: true)
        let declared = try schema.map(RecordsArguments.schema) ?? RecordSchema(implied)
        // The key first: a command that fails for want of one creates no collection (nor store).
        let sealing: RecordSealing
        if try keys.unlockIfRequested(store, at: location) {
            sealing = .storeKey
        } else if implied.values.contains(where: \.isSealed) {
            sealing = .password(try keys.password(confirm: true))
        } else {
            sealing = .storeKey
        }
        let existing = try store.collections()[collection]
        if existing == nil || schema != nil { try store.createCollection(collection, schema: declared) }
        try RecordsFieldOptions.check(implied, against: try store.schema(of: collection), collection: collection)
        for _ in 0..<max(1, repeatCount) {
            print(try store.add(fields, to: collection, sealing: sealing).uuidString.lowercased())
        }
    }
}

struct RecordsListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List records (clear fields only; nothing is decrypted).",
        discussion: "With --vault or --key-file each record is first checked against its MAC (a record changed behind the store's back is an error).")

    @OptionGroup var location: RecordsStoreOption
    @Option(help: "Only this collection.") var collection: String?
    @OptionGroup var keys: RecordsKeyOptions
    @Flag(help: "Print a JSON array of {id, collection, keying, clear_fields, sealed_fields, opened_fields}; each field {name, text} or {name, base64}.")
    var json = false

    func run() throws {
        let store = try location.open()
        try keys.unlockIfRequested(store, at: location)
        try RecordsOutput.print(try store.search(in: collection), json: json)
    }
}

struct RecordsSearchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find records by clear field equality (name=value), prefix, full text, or a sealed field's blind index.",
        discussion: """
            Nothing is decrypted. A condition on a blind-indexed sealed field needs the store key (--vault or --key-file); \
            with the store key, each record found is checked against its MAC and against the search.
            """)

    @OptionGroup var location: RecordsStoreOption
    @Option(help: "Only this collection.") var collection: String?
    @Option(help: "A clear text field starting with a prefix, name=prefix. Repeatable.") var prefix: [String] = []
    @Option(help: "A full-text query over the clear text fields (FTS5 syntax: words, \"phrases\", prefix*, AND, OR, NOT, parentheses; case and diacritics ignored).") var text: String?
    @OptionGroup var keys: RecordsKeyOptions
    @Argument(help: "Conditions name=value (clear equality, or blind index of a sealed field).") var conditions: [String] = []
    @Flag(help: "Print a JSON array of records, as `list --json`.") var json = false

    func run() throws {
        let store = try location.open()
        try keys.unlockIfRequested(store, at: location)
        var query: [RecordCondition] = []
        for condition in conditions {
            let (name, text) = try RecordsArguments.split(condition, option: "condition")
            query.append(.equals(field: name, value: try RecordsArguments.value(text)))
        }
        for condition in prefix {
            let (name, text) = try RecordsArguments.split(condition, option: "--prefix")
            query.append(.prefix(field: name, prefix: text))
        }
        if let text { query.append(.fullText(text)) }
        try RecordsOutput.print(try store.search(in: collection, query), json: json)
    }
}

struct RecordsShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one record; --decrypt opens its sealed fields.")

    @OptionGroup var location: RecordsStoreOption
    @Flag(help: "Open the sealed fields (needs the record's password, or the store key).") var decrypt = false
    @OptionGroup var keys: RecordsKeyOptions
    @Argument(help: "The record id.") var id: String
    @Flag(help: "Print the record as one JSON object, as `list --json` (opened_fields with --decrypt).") var json = false

    func run() throws {
        let store = try location.open()
        let id = try RecordsArguments.id(id)
        let unlocked = try keys.unlockIfRequested(store, at: location)  // then the record is checked against its MAC
        let summary = try store.record(id)
        // Nothing sealed: nothing to open, no key needed.
        let record = decrypt && !summary.sealedFieldNames.isEmpty ? try keys.open(summary, in: store, unlocked: unlocked) : summary
        if json { return try JSONOutput.print(RecordsOutput.RecordJSON(record)) }
        print(RecordsOutput.block(record))
    }
}

extension RecordsKeyOptions {
    /// `record` with its sealed fields opened: with the record's password, or the store key (which
    /// the caller unlocked, when `unlocked`).
    func open(_ record: Record, in store: RecordStore, unlocked: Bool) throws -> Record {
        if record.keying == .password { return try store.open(record.id, password: try password(confirm: false)) }
        guard unlocked else { throw CLIError("this record is sealed with the store key: give --vault or --key-file") }
        return try store.open(record.id)
    }
}

struct RecordsGetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print one field of a record (opened if sealed).",
        discussion: """
            Text is printed with a newline; bytes are written exactly, nothing added (as `sf keychain get --raw`). \
            A sealed field needs the record's password or the store key, as `show --decrypt`.
            """)

    @OptionGroup var location: RecordsStoreOption
    @OptionGroup var keys: RecordsKeyOptions
    @Argument(help: "The record id.") var id: String
    @Argument(help: "The field name.") var field: String

    func run() throws {
        let store = try location.open()
        let unlocked = try keys.unlockIfRequested(store, at: location)
        let summary = try store.record(try RecordsArguments.id(id))
        let value: FieldValue
        if let clear = summary.clearFields[field] {
            value = clear
        } else if summary.sealedFieldNames.contains(where: { $0 == field }) {
            guard let opened = try keys.open(summary, in: store, unlocked: unlocked).openedFields[field] else {
                throw CLIError("field '\(field)' did not open")
            }
            value = opened
        } else {
            throw CLIError("record \(summary.id.uuidString.lowercased()) has no field '\(field)'")
        }
        switch value {
        case .string(let text): print(text)
        case .bytes(let bytes): try FileOutput(descriptor: STDOUT_FILENO, name: "standard output").write(bytes)
        }
    }
}

struct RecordsUpdateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "update", abstract: "Set or remove fields of a record.")

    @OptionGroup var location: RecordsStoreOption
    @OptionGroup var fieldOptions: RecordsFieldOptions
    @Option(help: "Remove this field. Repeatable.") var remove: [String] = []
    @OptionGroup var keys: RecordsKeyOptions
    @OptionGroup var scrypt: ScryptCostOption
    @Argument(help: "The record id.") var id: String

    func run() throws {
        let store = try location.open(kdf: scrypt.kdf)
        let id = try RecordsArguments.id(id)
        let (fields, implied) = try fieldOptions.read()
        // The key first: the record is checked against its MAC, and written with a new one.
        let unlocked = try keys.unlockIfRequested(store, at: location)
        let current = try store.record(id)
        try RecordsFieldOptions.check(implied, against: try store.schema(of: current.collection), collection: current.collection)
        var password: SecretBytes?
        if current.keying == .password, !fields.isEmpty {
            // Its sealed values bind its clear fields: any change re-seals them.
            password = try keys.password(confirm: false)
        } else if implied.values.contains(where: \.isSealed), !unlocked {
            throw CLIError("this record is sealed with the store key: give --vault or --key-file")
        }
        try store.update(id, setting: fields, removing: Set(remove), password: password)
    }
}

struct RecordsDeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a record.")

    @OptionGroup var location: RecordsStoreOption
    @Argument(help: "The record id.") var id: String

    func run() throws {
        try location.open().delete(try RecordsArguments.id(id))
    }
}

struct RecordsExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Write the store as JSON lines; sealed values stay sealed.")

    @OptionGroup var location: RecordsStoreOption
    @Option(name: .shortAndLong, help: "Output file (default: standard output).") var output: String?

    func run() throws {
        if let output, output != "-", location.postgres == nil {
            let path = try location.path()
            for storeFile in [path, path + "-wal", path + "-shm"] where Terminal.isSameFile(output, storeFile) {
                throw CLIError("\(output) is the store's own file (\(storeFile)): the export would replace it; name another output file")
            }
        }
        let store = try location.open()
        // Streamed: a file appears whole (temporary file, fsync, rename) or not at all; standard
        // output receives the lines as they come.
        if let output, output != "-" {
            _ = try OutputDestination.write(to: output) { try store.export(to: $0) }
        } else {
            try store.export(to: FileOutput(descriptor: 1, name: "standard output"))
        }
    }
}

struct RecordsImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Add the records of an export of this store (all or nothing).",
        discussion: "A store file that does not exist yet is created as the exported store (same id and keys).")

    @OptionGroup var location: RecordsStoreOption
    @Option(name: .shortAndLong, help: "Input file (default: standard input).") var input: String?

    func run() throws {
        // The export is read from a file in chunks (bounded memory), twice for a new store (its
        // store line, then its records) and again by PostgreSQL's retry of the transaction. So
        // standard input, or any input that is not a regular file (a pipe, `<(…)`, a device), is
        // first copied to a private temporary file that can be read again.
        if let input, input != "-", Self.isRegularFile(input) { return try importFile(input) }
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("sf-import-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: spool) }
        // The copy holds clear fields and wrapped keys: Ctrl-C, while it is made or read, must not
        // leave it behind either.
        try TemporaryFiles.whileRunning(onTerminationSignal: { unlink(spool) }) { () throws in
            if let input, input != "-" {
                try Self.spool(FileInput(path: input), to: spool)
            } else {
                try Self.spool(Terminal.standardInput(), to: spool)
            }
            try importFile(spool)
        }
    }

    /// Whether `path` names a regular file (through links); anything else is spooled.
    static func isRegularFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }

    /// Imports the export in `file`.
    private func importFile(_ file: String) throws {
        let bar = ProgressBar.total(forInput: input, minimumSize: 1 << 20).map { ProgressBar(total: $0) }
        defer { bar?.clear() }
        let progress: ((RecordStore.ImportProgress) -> Void)? = bar.map { bar in { bar.update(fraction: $0.fractionRead ?? 0) } }
        var count = 0
        if let storage = try location.postgresStorage() {
            // An empty database becomes the exported store (same id and keys); a store there must be it.
            if try storage.loadMetadata() == nil {
                _ = try RecordStore(storage: storage, importingFile: file, progress: { count = $0.records; progress?($0) })
            } else {
                count = try RecordStore(storage: storage).importFile(atPath: file, progress: progress)
            }
            bar?.clear()
            Terminal.writeError("imported \(count) record\(count == 1 ? "" : "s")")
            return
        }
        let path = try location.path()
        if FileManager.default.fileExists(atPath: path) {
            count = try RecordStore(path: path).importFile(atPath: file, progress: progress)
        } else {
            do {
                _ = try RecordStore(
                    storage: try SQLiteRecordStorage(path: path), importingFile: file, progress: { count = $0.records; progress?($0) })
            } catch {
                // The file did not exist before: leave nothing behind.
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
                throw error
            }
        }
        bar?.clear()
        Terminal.writeError("imported \(count) record\(count == 1 ? "" : "s")")
    }

    /// Copies `input` to `path`, a new file only the user can read (the export holds clear
    /// fields). The caller removes it.
    static func spool(_ input: borrowing FileInput, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CLIError("cannot create a temporary file for \(input.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        do {
            let output = FileOutput(descriptor: descriptor, name: path)
            while true {
                let chunk = try input.read(upTo: 1 << 20)
                if chunk.isEmpty { return }
                try output.write(chunk)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
    }
}

struct RecordsChangePasswordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "change-password", abstract: "Re-seal a password record under a new password.")

    @OptionGroup var location: RecordsStoreOption
    @Option(help: "File whose first line is the current password (default: prompt).") var passwordFile: String?
    @Option(help: "File whose first line is the new password (default: prompt twice).") var newPasswordFile: String?
    @OptionGroup var scrypt: ScryptCostOption
    @Argument(help: "The record id.") var id: String

    func run() throws {
        let store = try location.open(kdf: scrypt.kdf)
        let old = try Terminal.secret(file: passwordFile, prompt: "Current record password: ", option: "--password-file")
        let new = try Terminal.secret(file: newPasswordFile, prompt: "New record password: ", confirm: true, option: "--new-password-file")
        try store.changePassword(of: try RecordsArguments.id(id), from: old, to: new)
    }
}

struct RecordsRewrapCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rewrap",
        abstract: "Re-wrap the store keys under the vault's current application key (after sf vault rotate).",
        discussion: """
            The store keys stay the same, so no record changes. Afterwards the vault's old application key \
            can be retired (sf vault retire-key) without making this store unreadable.
            """)

    @OptionGroup var location: RecordsStoreOption
    @OptionGroup var keys: RecordsKeyOptions

    func run() throws {
        guard keys.usesStoreKey else { throw ValidationError("give --vault or --key-file") }
        let store = try location.open()
        guard let sealer = try keys.storeKeySealer() else { throw ValidationError("give --vault or --key-file") }
        let rewrapped = try store.rewrapKeys(with: sealer.sealer)
        try sealer.finish(store, at: location)
        for key in rewrapped { print("store key \(key.id): \(RecordsOutput.wrapping(key))") }
    }
}

struct RecordsStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show the store's id, collections and store keys, with what wraps each (nothing is unlocked).")

    @OptionGroup var location: RecordsStoreOption

    func run() throws {
        let store = try location.open()
        let (current, wrapped) = try store.wrappedKeys()
        print("store: \(try location.description())")
        print("store id: \(Hex.encode(store.storeId))")
        print("collections: \(try store.collections().keys.sorted().map(Terminal.printable).joined(separator: ", "))")
        if wrapped.isEmpty { print("store keys: none yet (made by the first --vault or --key-file use)") }
        for key in wrapped {
            print("store key \(key.id)\(key.id == current ? " (current)" : ""): \(RecordsOutput.wrapping(key))")
        }
    }
}

struct RecordsRotateKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-key",
        abstract: "Re-seal every store-keyed record under a new store key (resumes an interrupted rotation first).")

    @OptionGroup var location: RecordsStoreOption
    @OptionGroup var keys: RecordsKeyOptions
    @Option(help: "Records re-sealed per transaction.") var batchSize = 256

    func run() throws {
        guard keys.usesStoreKey else { throw ValidationError("give --vault or --key-file") }
        let store = try location.open(batchSize: batchSize)
        guard let sealer = try keys.storeKeySealer() else { throw ValidationError("give --vault or --key-file") }
        let rotation = try store.rotateStoreKey(with: sealer.sealer) { done in Terminal.writeError("resealed \(done)") }
        try sealer.finish(store, at: location)
        print("store key \(rotation.keyId): \(rotation.resealed) record\(rotation.resealed == 1 ? "" : "s") re-sealed"
            + (rotation.resumed ? " (finished an interrupted rotation)" : ""))
    }
}
