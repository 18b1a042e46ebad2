import Dispatch
import Foundation
import SecureCore

/// The in-memory view of a keychain and the writer thread that persists it.
///
/// Mutations change `items` at once (read-your-writes) and append the change to `pending` (cheap for
/// the caller: no second hash lookup). The writer thread owns the SQLite connection; it takes
/// `pending` as one batch after the configured delay (or at once when the batch is full, a
/// `synchronize` waits, or the keychain closes), coalesces repeated changes to one item, and writes
/// the batch in one transaction. Readers only take
/// the state lock, which is never held during I/O, so they never wait on the writer's disk work.
///
/// Changes by other processes are detected with `PRAGMA data_version` at every batch, every
/// `synchronize`, and at a read or a change (when none is being written) when the view was last
/// checked more than the poll interval ago; the
/// view is then reloaded from the file and the changes not yet written are replayed on top. An idle
/// keychain's thread sleeps until there is work: no timer wakes it.
final class KeychainEngine: Sendable {
    struct Waiter: Sendable {
        /// The mutation count the caller must see durable.
        let target: UInt64
        let resume: @Sendable (KeychainError?) -> Void
    }

    struct State: Sendable {
        var items = ItemTable()
        /// Changes not yet handed to the writer, oldest first.
        var pending: [KeychainChange] = []
        /// When the oldest pending change was made (uptime nanoseconds).
        var pendingSince: UInt64?
        /// Mutations applied to `items` so far.
        var mutations: UInt64 = 0
        /// Mutations known to be in the file.
        var durable: UInt64 = 0
        var waiters: [Waiter] = []
        var closing = false
        /// The file was opened for reading only (`KeychainStore.isReadOnly`): mutations are refused.
        var isReadOnly = false
        /// When the view was last checked against the file's `data_version` (uptime nanoseconds).
        var lastChecked: UInt64 = 0
        /// How many times the writer checked the file for other processes' changes (for tests).
        var checks = 0
        /// The error of a final flush that failed during close.
        var closeError: KeychainError?

        mutating func record(_ identity: KeychainItem.Identity, _ change: StoredItem?) {
            let existed = items[identity] != nil
            items[identity] = change
            pending.append(KeychainChange(identity: identity, item: change, freesValue: existed))
            mutations += 1
        }

        /// Records the item `make` builds from the current one (nil when absent), with one lookup.
        mutating func record(_ identity: KeychainItem.Identity, _ make: (StoredItem?) -> StoredItem) {
            let (change, existed) = Self.replace(&items[identity], with: make)
            pending.append(KeychainChange(identity: identity, item: change, freesValue: existed))
            mutations += 1
        }

        private static func replace(_ slot: inout StoredItem?, with make: (StoredItem?) -> StoredItem) -> (StoredItem, existed: Bool) {
            let existed = slot != nil
            let change = make(slot)
            slot = change
            return (change, existed)
        }

        mutating func takeWaiters(upTo sequence: UInt64) -> [Waiter] {
            let done = waiters.filter { $0.target <= sequence }
            waiters.removeAll { $0.target <= sequence }
            return done
        }

        /// Replaces the view with `reloaded` plus the changes not yet written.
        mutating func replace(with reloaded: ItemTable) {
            items = reloaded
            for change in pending {
                items[change.identity] = change.item
            }
        }
    }

    private enum Step {
        case exit
        case flush([KeychainChange], sequence: UInt64)
        case refresh
        /// Sleep until woken, or until the deadline (uptime nanoseconds) when there is one.
        case wait(until: UInt64?)
    }

    let path: String
    let configuration: Keychain.Configuration
    let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)

    init(path: String, configuration: Keychain.Configuration) throws(KeychainError) {
        self.path = path
        self.configuration = configuration
        let opened = DispatchSemaphore(value: 0)
        let openError = Locked<KeychainError?>(nil)
        let thread = Thread { [self] in
            openAndRun(opened: opened, openError: openError)
            exited.signal()
        }
        thread.name = "SecureKeychain writer"
        thread.start()
        opened.wait()
        if let error = openError.withLock({ $0 }) { throw error }
    }

    // MARK: Reads, mutations and synchronization (any thread)

    /// Reads the view. When it was last checked against the file more than the poll interval ago,
    /// it is first refreshed (as `synchronize()` does), so other processes' changes show within
    /// the poll interval of a read without any thread polling in the background.
    func read<R>(_ body: (State) -> R) -> R {
        refreshIfStale()
        return state.withLock { body($0) }
    }

    /// Refreshes the view (as `synchronize()` does) when it was last checked against the file more
    /// than the poll interval ago. Before a change, only when every earlier change is durable: then
    /// there is nothing to flush and the call only checks the file, so a change never waits for an
    /// fsync; changes still being written refresh the view themselves when their batch is written.
    private func refreshIfStale(beforeChange: Bool = false) {
        let stale = state.withLock { s in
            !s.closing && DispatchTime.now().uptimeNanoseconds >= s.lastChecked + configuration.pollNanoseconds
                && (!beforeChange || s.durable == s.mutations)
        }
        if stale { try? synchronize() }
    }

    /// Applies `body` to the state under the lock, then wakes the writer when it has new work.
    /// Like a read, it first refreshes a view older than the poll interval (`refreshIfStale`), so
    /// its checks (`protectionMismatch`, `duplicateItem`, what an update or delete matches) are made
    /// against other processes' changes up to then, not against the view of the last read, however
    /// old.
    func mutate<R>(_ body: (inout State) throws(KeychainError) -> R) throws(KeychainError) -> R {
        refreshIfStale(beforeChange: true)
        let (result, wakeWriter) = try state.withLock { (s: inout State) throws(KeychainError) -> (R, Bool) in
            guard !s.closing else { throw .closed }
            guard !s.isReadOnly else { throw .readOnly(path: path, reason: "it was opened for reading only, so changes are refused") }
            let wasEmpty = s.pending.isEmpty
            let result = try body(&s)
            if wasEmpty, !s.pending.isEmpty { s.pendingSince = DispatchTime.now().uptimeNanoseconds }
            return (result, (wasEmpty && !s.pending.isEmpty) || s.pending.count == configuration.maximumBatch)
        }
        if wakeWriter { wake.signal() }
        if configuration.isImmediate { try synchronize() }
        return result
    }

    /// Calls `resume` once every mutation made before this call is durable (or failed to be).
    func synchronize(_ resume: @escaping @Sendable (KeychainError?) -> Void) {
        let accepted = state.withLock { s in
            if s.closing { return false }
            s.waiters.append(Waiter(target: s.mutations, resume: resume))
            return true
        }
        if accepted { wake.signal() } else { resume(.closed) }
    }

    /// Blocks until every earlier mutation is durable.
    func synchronize() throws(KeychainError) {
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<KeychainError?>(nil)
        synchronize { error in
            outcome.withLock { $0 = error }
            done.signal()
        }
        done.wait()
        if let error = outcome.withLock({ $0 }) { throw error }
    }

    /// Flushes everything, stops the writer and closes the file. Later mutations throw `closed`.
    func close() throws(KeychainError) {
        let alreadyClosing = state.withLock { s in
            defer { s.closing = true }
            return s.closing
        }
        guard !alreadyClosing else { return }
        wake.signal()
        exited.wait()
        if let error = state.withLock({ $0.closeError }) { throw error }
    }

    // MARK: The writer thread

    /// Opens the file and loads the view, reports the outcome, then serves until closed. The
    /// connection lives in this frame only, so it is closed before `exited` is signalled.
    private func openAndRun(opened: DispatchSemaphore, openError: Locked<KeychainError?>) {
        let store: KeychainStore
        let loaded: (ItemTable, Int64)
        do throws(KeychainError) {
            store = try KeychainStore(
                path: path, busyTimeoutMilliseconds: configuration.busyTimeoutMilliseconds, readOnly: configuration.isReadOnly)
            loaded = try store.transaction(write: false) { () throws(KeychainError) in
                (try store.loadItems(), try store.dataVersion())
            }
        } catch {
            openError.withLock { $0 = error }
            opened.signal()
            return
        }
        state.withLock {
            $0.items = loaded.0
            $0.isReadOnly = store.isReadOnly
            $0.lastChecked = DispatchTime.now().uptimeNanoseconds
        }
        opened.signal()
        run(store, knownVersion: loaded.1)
    }

    private func run(_ store: KeychainStore, knownVersion: Int64) {
        var knownVersion = knownVersion
        while true {
            switch nextStep() {
            case .exit:
                return
            case .flush(let batch, let sequence):
                flush(batch, sequence: sequence, store: store, knownVersion: &knownVersion)
            case .refresh:
                refresh(store: store, knownVersion: &knownVersion)
            case .wait(let deadline?):
                _ = wake.wait(timeout: DispatchTime(uptimeNanoseconds: deadline))
            case .wait(nil):
                wake.wait()
            }
        }
    }

    private func nextStep() -> Step {
        state.withLock { s in
            let now = DispatchTime.now().uptimeNanoseconds
            if !s.pending.isEmpty {
                let due = (s.pendingSince ?? now) + configuration.delayNanoseconds
                guard s.closing || !s.waiters.isEmpty || s.pending.count >= configuration.maximumBatch || now >= due else {
                    return .wait(until: due)
                }
                let batch = s.pending
                s.pending = []
                s.pendingSince = nil
                return .flush(batch, sequence: s.mutations)
            }
            if !s.waiters.isEmpty { return .refresh }
            if s.closing { return .exit }
            return .wait(until: nil)
        }
    }

    /// Writes one batch in one transaction, reloading the view when another connection changed the file.
    private func flush(
        _ batch: [KeychainChange], sequence: UInt64, store: KeychainStore, knownVersion: inout Int64
    ) {
        do throws(KeychainError) {
            let (reloaded, version) = try withBusyRetry { () throws(KeychainError) in
                try store.transaction(write: true) { () throws(KeychainError) in
                    let version = try store.dataVersion()
                    try store.write(batch, fileChanged: version != knownVersion)
                    return (version == knownVersion ? nil : try store.loadItems(), version)
                }
            }
            knownVersion = version
            // A deleted or replaced value is zeroed in the new page (secure_delete), but the WAL
            // still holds the frames that wrote it, until a checkpoint resets the WAL: that only
            // happened when the last connection closed, so with another process holding the file
            // open the old value stayed in `-wal`. Truncate it now.
            if batch.contains(where: \.freesValue) { store.checkpointDiscardingOldFrames() }
            let done = state.withLock { s in
                if let reloaded { s.replace(with: reloaded) }
                s.durable = sequence
                s.lastChecked = DispatchTime.now().uptimeNanoseconds
                return s.takeWaiters(upTo: sequence)
            }
            for waiter in done { waiter.resume(nil) }
        } catch {
            let failed = state.withLock { s in
                if s.closing {
                    // Closing drops the changes after this batch too: they will never be written,
                    // so every waiter gets the error (one left waiting would hang, and `close()`
                    // with it, as the writer would refresh for it forever).
                    s.closeError = error
                    s.pending = []
                    return s.takeWaiters(upTo: .max)
                }
                // Put the batch back before any newer change, to be retried after the delay.
                s.pending = batch + s.pending
                s.pendingSince = s.pendingSince ?? DispatchTime.now().uptimeNanoseconds
                return s.takeWaiters(upTo: sequence)
            }
            for waiter in failed { waiter.resume(error) }
        }
    }

    /// Reloads the view when another connection changed the file, then releases waiters whose
    /// mutations are all durable.
    private func refresh(store: KeychainStore, knownVersion: inout Int64) {
        var failure: KeychainError?
        do throws(KeychainError) {
            let version = try store.dataVersion()
            if version != knownVersion {
                let reloaded = try withBusyRetry { () throws(KeychainError) in
                    try store.transaction(write: false) { () throws(KeychainError) in
                        (try store.loadItems(), try store.dataVersion())
                    }
                }
                knownVersion = reloaded.1
                state.withLock { $0.replace(with: reloaded.0) }
            }
        } catch {
            failure = error
        }
        let done = state.withLock { s in
            s.checks += 1
            if failure == nil { s.lastChecked = DispatchTime.now().uptimeNanoseconds }
            return s.takeWaiters(upTo: s.durable)
        }
        for waiter in done { waiter.resume(failure) }
    }

    /// Retries `body` while another connection holds the lock beyond the busy timeout.
    private func withBusyRetry<R>(_ body: () throws(KeychainError) -> R) throws(KeychainError) -> R {
        var attempt = 0
        while true {
            do {
                return try body()
            } catch {
                guard case .storage(_, let code, _) = error, code & 0xFF == 5 /* SQLITE_BUSY */,
                    attempt < configuration.busyRetries
                else { throw error }
                attempt += 1
            }
        }
    }
}
