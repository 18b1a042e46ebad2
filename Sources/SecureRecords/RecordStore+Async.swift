import Foundation
import SecureCore

extension RecordStore {
    /// The store's calls as async functions, for servers and other callers in Swift concurrency:
    /// `try await store.async.add(fields, to: "gifts")`.
    ///
    /// Each call runs the synchronous method of the same name, with the same guarantees, deadlines
    /// and errors, on one of the store's own threads (`BlockingCallPool`), never on Swift's
    /// cooperative pool: a task awaiting a transaction, a lock in the server or a password KDF
    /// leaves its thread to other tasks. At most `RecordStorage.concurrentCalls` calls run at once
    /// (on PostgreSQL, one per pooled connection); the rest wait in a first-in, first-out queue,
    /// holding no thread and no connection. The queue has no deadline of its own: a call's
    /// deadlines start when it leaves the queue. (If other stores or synchronous callers share the
    /// same storage, their calls compete for its connections too, within their deadlines.) Once
    /// queued, a call runs to completion (or to its storage deadline) even if the awaiting task is
    /// cancelled: a transaction is never abandoned half-way by a client that went away.
    ///
    /// Not here: `export` and `importLines`, which hand lines to and from the caller as they go;
    /// call them from a thread of your own. The synchronous methods stay as they are, for callers
    /// outside async code.
    public var async: Async { Async(store: self) }

    /// See `RecordStore.async`.
    public struct Async: Sendable {
        /// The store these calls act on.
        public let store: RecordStore

        /// `RecordStore.unlock(with:)`, awaited.
        public func unlock(with sealer: any ItemSealer) async throws(RecordsError) {
            try await run { (store) throws(RecordsError) in try store.unlock(with: sealer) }
        }

        /// `RecordStore.createCollection(_:schema:)`, awaited.
        public func createCollection(_ collection: String, schema: RecordSchema) async throws(RecordsError) {
            try await run { (store) throws(RecordsError) in try store.createCollection(collection, schema: schema) }
        }

        /// `RecordStore.collections()`, awaited.
        public func collections() async throws(RecordsError) -> [String: RecordSchema] {
            try await run { (store) throws(RecordsError) in try store.collections() }
        }

        /// `RecordStore.schema(of:)`, awaited.
        public func schema(of collection: String) async throws(RecordsError) -> RecordSchema {
            try await run { (store) throws(RecordsError) in try store.schema(of: collection) }
        }

        /// `RecordStore.add(_:to:sealing:id:)`, awaited.
        @discardableResult
        public func add(
            _ fields: [String: FieldValue], to collection: String, sealing: RecordSealing = .storeKey, id: UUID? = nil
        ) async throws(RecordsError) -> UUID {
            try await run { (store) throws(RecordsError) in try store.add(fields, to: collection, sealing: sealing, id: id) }
        }

        /// `RecordStore.add(contentsOf:to:sealing:)`, awaited.
        @discardableResult
        public func add(
            contentsOf records: [[String: FieldValue]], to collection: String, sealing: RecordSealing = .storeKey
        ) async throws(RecordsError) -> [UUID] {
            try await run { (store) throws(RecordsError) in try store.add(contentsOf: records, to: collection, sealing: sealing) }
        }

        /// `RecordStore.record(_:)`, awaited.
        public func record(_ id: UUID) async throws(RecordsError) -> Record {
            try await run { (store) throws(RecordsError) in try store.record(id) }
        }

        /// `RecordStore.open(_:password:)`, awaited.
        public func open(_ id: UUID, password: SecretBytes? = nil) async throws(RecordsError) -> Record {
            try await run { (store) throws(RecordsError) in try store.open(id, password: password) }
        }

        /// `RecordStore.update(_:setting:removing:password:)`, awaited.
        public func update(
            _ id: UUID, setting: [String: FieldValue], removing: Set<String> = [], password: SecretBytes? = nil
        ) async throws(RecordsError) {
            try await run { (store) throws(RecordsError) in try store.update(id, setting: setting, removing: removing, password: password) }
        }

        /// `RecordStore.delete(_:)`, awaited.
        public func delete(_ id: UUID) async throws(RecordsError) {
            try await run { (store) throws(RecordsError) in try store.delete(id) }
        }

        /// `RecordStore.changePassword(of:from:to:)`, awaited.
        public func changePassword(of id: UUID, from oldPassword: SecretBytes, to newPassword: SecretBytes) async throws(RecordsError) {
            try await run { (store) throws(RecordsError) in try store.changePassword(of: id, from: oldPassword, to: newPassword) }
        }

        /// `RecordStore.search(in:_:)`, awaited.
        public func search(in collection: String? = nil, _ conditions: [RecordCondition] = []) async throws(RecordsError) -> [Record] {
            try await run { (store) throws(RecordsError) in try store.search(in: collection, conditions) }
        }

        /// `RecordStore.rotateStoreKey(with:afterBatch:)`, awaited; `afterBatch` is called on the
        /// store's thread.
        @discardableResult
        public func rotateStoreKey(
            with sealer: any ItemSealer, afterBatch: (@Sendable (Int) -> Void)? = nil
        ) async throws(RecordsError) -> KeyRotation {
            try await run { (store) throws(RecordsError) in try store.rotateStoreKey(with: sealer, afterBatch: afterBatch) }
        }

        /// `RecordStore.wrappedKeys()`, awaited.
        public func wrappedKeys() async throws(RecordsError) -> (currentKeyId: UInt32?, keys: [WrappedStoreKey]) {
            try await run { (store) throws(RecordsError) in try store.wrappedKeys() }
        }

        /// `RecordStore.rewrapKeys(with:)`, awaited.
        @discardableResult
        public func rewrapKeys(with sealer: any ItemSealer) async throws(RecordsError) -> [WrappedStoreKey] {
            try await run { (store) throws(RecordsError) in try store.rewrapKeys(with: sealer) }
        }

        /// `RecordStore.importFile(atPath:progress:)`, awaited; `progress` is called on the store's
        /// thread.
        @discardableResult
        public func importFile(
            atPath path: String, progress: (@Sendable (ImportProgress) -> Void)? = nil
        ) async throws(RecordsError) -> Int {
            try await run { (store) throws(RecordsError) in try store.importFile(atPath: path, progress: progress) }
        }

        /// `RecordStore.createCollection(_:for:)`, awaited.
        public func createCollection<T: RecordCodable>(_ collection: String, for type: T.Type) async throws(RecordsError) {
            try await createCollection(collection, schema: try T.recordSchema())
        }

        /// `RecordStore.add(_:to:sealing:)` for a `RecordCodable` value, awaited (the value is
        /// encoded before the call leaves the caller's thread).
        @discardableResult
        public func add<T: RecordCodable>(_ value: T, to collection: String, sealing: RecordSealing = .storeKey) async throws(RecordsError) -> UUID {
            try await add(try value.recordFields(), to: collection, sealing: sealing)
        }

        /// `RecordStore.open(_:_:password:)`, awaited (the record is decoded on the caller's thread).
        public func open<T: RecordCodable>(_ type: T.Type, _ id: UUID, password: SecretBytes? = nil) async throws(RecordsError) -> T {
            try T(recordFields: try await open(id, password: password).fields)
        }

        private func run<R: Sendable>(_ body: @escaping @Sendable (RecordStore) throws(RecordsError) -> R) async throws(RecordsError) -> R {
            let store = store
            return try await store.blockingCalls.run { () throws(RecordsError) -> R in try body(store) }
        }
    }
}
