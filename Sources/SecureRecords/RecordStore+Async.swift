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
    /// holding no thread and no connection, so a burst of requests never waits out a connection
    /// lease's deadline. Once started, a call runs to completion (or to its storage deadline) even
    /// if the awaiting task is cancelled: a transaction is never abandoned half-way by a client that
    /// went away. The synchronous methods stay as they are, for callers outside async code.
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
        public func add(
            _ fields: [String: FieldValue], to collection: String, sealing: RecordSealing = .storeKey, id: UUID = UUID()
        ) async throws(RecordsError) -> UUID {
            try await run { (store) throws(RecordsError) in try store.add(fields, to: collection, sealing: sealing, id: id) }
        }

        /// `RecordStore.add(contentsOf:to:sealing:)`, awaited.
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
        public func rotateStoreKey(
            with sealer: any ItemSealer, afterBatch: (@Sendable (Int) -> Void)? = nil
        ) async throws(RecordsError) -> KeyRotation {
            try await run { (store) throws(RecordsError) in try store.rotateStoreKey(with: sealer, afterBatch: afterBatch) }
        }

        /// `RecordStore.rewrapKeys(with:)`, awaited.
        public func rewrapKeys(with sealer: any ItemSealer) async throws(RecordsError) -> [WrappedStoreKey] {
            try await run { (store) throws(RecordsError) in try store.rewrapKeys(with: sealer) }
        }

        /// `RecordStore.importFile(atPath:progress:)`, awaited; `progress` is called on the store's
        /// thread.
        public func importFile(
            atPath path: String, progress: (@Sendable (ImportProgress) -> Void)? = nil
        ) async throws(RecordsError) -> Int {
            try await run { (store) throws(RecordsError) in try store.importFile(atPath: path, progress: progress) }
        }

        private func run<R: Sendable>(_ body: @escaping @Sendable (RecordStore) throws(RecordsError) -> R) async throws(RecordsError) -> R {
            let store = store
            return try await store.blockingCalls.run { () throws(RecordsError) -> R in try body(store) }
        }
    }
}
