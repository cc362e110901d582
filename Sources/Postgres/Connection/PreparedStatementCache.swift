/// The named statements one connection has prepared on the server, bounded, least recently used
/// out first.
///
/// Why: the ledger's statements are large CTEs; sent as unnamed statements they are parsed and
/// planned on every call, which cost the server more than executing them. Prepared once per
/// connection, a call is a single Bind/Execute round trip and the server reuses the parse tree and,
/// after its first executions, a generic plan.
///
/// The cache is plain data owned by one `PGConnection` and touched only from that connection's
/// libpq jobs (one at a time), so it needs no lock. It lives and dies with the connection: a
/// replaced connection starts empty, so a name is never used on a session that did not prepare it.
struct PreparedStatementCache {
    /// A statement is identified by its text and the type OIDs its parameters were prepared with:
    /// the same text bound with other types is another server-side statement.
    struct Key: Hashable {
        let sql: String
        let parameterTypes: [UInt32]
    }

    private struct Entry {
        let name: String
        var lastUse: UInt64
        /// Times the statement was handed out by ``lookup(_:)``.
        var uses = 0
    }

    /// Most statements kept prepared; 0 turns the cache off.
    let capacity: Int
    /// Uses after which a statement is retired and prepared again (0: never): PostgreSQL's choice
    /// between custom and generic plans remembers costs from before an ANALYZE, and a statement
    /// prepared again chooses afresh (`ConnectionConfiguration.preparedStatementMaxUses`).
    let maxUses: Int
    private var entries: [Key: Entry] = [:]
    private var useClock: UInt64 = 0
    private var namesIssued = 0
    /// Server statements no longer in the cache that still need a DEALLOCATE. Deallocation waits
    /// until the connection is outside a transaction: a failing DEALLOCATE there would abort it.
    private(set) var pendingDeallocations: [String] = []

    init(capacity: Int, maxUses: Int = 0) {
        self.capacity = max(0, capacity)
        self.maxUses = max(0, maxUses)
    }

    var count: Int { entries.count }
    var isEnabled: Bool { capacity > 0 }

    /// The name of the prepared statement for `key`, marking it as just used; nil when there is none,
    /// or when it has been used `maxUses` times (it is retired: deallocated later, and the caller
    /// prepares it afresh under a new name).
    mutating func lookup(_ key: Key) -> String? {
        guard var entry = entries[key] else { return nil }
        if maxUses > 0, entry.uses >= maxUses {
            entries[key] = nil
            pendingDeallocations.append(entry.name)
            return nil
        }
        useClock += 1
        entry.lastUse = useClock
        entry.uses += 1
        entries[key] = entry
        return entry.name
    }

    /// A name no statement of this connection has had. Names are never reused, so a statement
    /// the server still holds (a deallocation still pending, or lost track of) can never clash.
    mutating func makeName() -> String {
        namesIssued += 1
        return "shopledger_\(namesIssued)"
    }

    /// Records a statement the server has just prepared, evicting the least recently used one when
    /// full (its name joins the pending deallocations).
    mutating func insert(_ key: Key, name: String) {
        if entries.count >= capacity, let victim = entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            entries[victim.key] = nil
            pendingDeallocations.append(victim.value.name)
        }
        useClock += 1
        // Preparing is followed by the first execution: its first use.
        entries[key] = Entry(name: name, lastUse: useClock, uses: 1)
    }

    /// Forgets one statement whose server plan can no longer be used (its result type changed);
    /// it is deallocated later and the next use prepares it afresh under a new name.
    mutating func invalidate(_ key: Key) {
        guard let entry = entries.removeValue(forKey: key) else { return }
        pendingDeallocations.append(entry.name)
    }

    /// Forgets every statement: the server said one of ours does not exist, so the session's
    /// statements were discarded behind our back (DEALLOCATE ALL, DISCARD ALL). Nothing is
    /// deallocated: those names are gone or will never be used again.
    mutating func removeAll() {
        entries = [:]
        pendingDeallocations = []
    }

    /// Forgets every statement because a statement that may have discarded them ran (its text
    /// mentions DEALLOCATE or DISCARD; it may be a false alarm). Each name is deallocated later: one
    /// the server already dropped fails harmlessly outside a transaction, and one it still holds is
    /// not left behind for the connection's lifetime.
    mutating func retireAll() {
        pendingDeallocations += entries.values.map(\.name)
        entries = [:]
    }

    /// Hands over the names to deallocate now.
    mutating func takePendingDeallocations() -> [String] {
        defer { pendingDeallocations = [] }
        return pendingDeallocations
    }
}
