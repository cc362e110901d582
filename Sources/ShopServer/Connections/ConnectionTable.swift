/// Which connections are open and which of them may be shed, as a state machine generic over what it
/// tracks (`Connection`), so its decisions are tested without a socket (`ConnectionTableTests`).
///
/// A connection is *waiting* from when it opens until its request's head has arrived, and again from
/// when its response has been written until the next head: half-open or idle keep-alive, it is
/// costing a socket and nothing else. It is *busy* in between. At most `maximum` are open; one more
/// takes the place of the connection that has been waiting longest (that one is closed), and is
/// refused at once only when every open connection is busy. A flood of half-open connections thus
/// cannot keep a health check or a purchase out: each newcomer sheds the oldest of them.
struct ConnectionTable<Connection> {
    enum Admission {
        /// Admitted; when `shedding` is set, that connection must be closed to make room.
        case admitted(id: UInt64, shedding: Connection?)
        /// Every open connection is busy: close the new one.
        case refused
    }

    private struct Entry {
        let connection: Connection
        /// Bumped at every change of state; a queued ticket whose generation differs is stale.
        var generation: UInt64
        var busy: Bool
    }

    private struct Ticket {
        let id: UInt64
        let generation: UInt64
    }

    let maximum: Int
    private var entries: [UInt64: Entry] = [:]
    /// Waiting connections, oldest first, as tickets; stale tickets are skipped and compacted away.
    private var waitingOrder: [Ticket] = []
    private var waitingStart = 0
    private var nextID: UInt64 = 0

    init(maximum: Int) {
        precondition(maximum > 0, "a connection table holds at least one connection")
        self.maximum = maximum
    }

    var openCount: Int { entries.count }
    var busyCount: Int { entries.values.count { $0.busy } }

    mutating func open(_ connection: Connection) -> Admission {
        var shed: Connection?
        if entries.count >= maximum {
            guard let oldest = popOldestWaiting() else { return .refused }
            shed = entries.removeValue(forKey: oldest)?.connection
        }
        nextID += 1
        entries[nextID] = Entry(connection: connection, generation: 0, busy: false)
        enqueueWaiting(nextID, generation: 0)
        return .admitted(id: nextID, shedding: shed)
    }

    /// A request's head arrived.
    mutating func requestStarted(_ id: UInt64) {
        guard var entry = entries[id], !entry.busy else { return }
        entry.busy = true
        entry.generation += 1
        entries[id] = entry
    }

    /// Its response was written: the connection waits for the next request.
    mutating func responseFinished(_ id: UInt64) {
        guard var entry = entries[id], entry.busy else { return }
        entry.busy = false
        entry.generation += 1
        entries[id] = entry
        enqueueWaiting(id, generation: entry.generation)
    }

    mutating func closed(_ id: UInt64) {
        entries[id] = nil
    }

    private mutating func enqueueWaiting(_ id: UInt64, generation: UInt64) {
        waitingOrder.append(Ticket(id: id, generation: generation))
        // Stale tickets (closed, or busy since) pile up with each request, and taken ones before
        // `waitingStart`: compact once either outgrows the table.
        if waitingStart > maximum || waitingOrder.count - waitingStart > 2 * maximum + 64 {
            waitingOrder = waitingOrder[waitingStart...].filter(isCurrent)
            waitingStart = 0
        }
    }

    private mutating func popOldestWaiting() -> UInt64? {
        while waitingStart < waitingOrder.count {
            let ticket = waitingOrder[waitingStart]
            waitingStart += 1
            if isCurrent(ticket) { return ticket.id }
        }
        waitingOrder.removeAll(keepingCapacity: true)
        waitingStart = 0
        return nil
    }

    private func isCurrent(_ ticket: Ticket) -> Bool {
        guard let entry = entries[ticket.id] else { return false }
        return !entry.busy && entry.generation == ticket.generation
    }
}
