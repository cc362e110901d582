/// Which connections are open and which of them may be shed, as a state machine generic over what it
/// tracks (`Connection`), so its decisions are tested without a socket (`ConnectionTableTests`).
///
/// A connection is in one of three phases:
/// - *waiting* for a request: from when it opens until a request's head arrives, and again from when its
///   response has been written: half-open or idle keep-alive, it costs a socket and nothing else;
/// - *receiving* a request's body: the head has arrived, the body has not all come;
/// - *busy*: the whole request has arrived and the server works on it, until its response is written.
///
/// At most `maximum` are open. One more takes the place of the waiting or receiving connection whose
/// client has gone longest without sending anything (that one is closed), and is refused at once only
/// when every open connection is busy. A flood of half-open connections, or of request heads that
/// declare a body and then send it a byte at a time or not at all, thus cannot keep a health check or a
/// purchase out: each newcomer sheds the staler of them, and a keep-alive client between two requests,
/// which has just been answered, is the freshest there is.
struct ConnectionTable<Connection> {
    enum Admission {
        /// Admitted; when `shedding` is set, that connection must be closed to make room.
        case admitted(id: UInt64, shedding: Connection?)
        /// Every open connection is busy: close the new one.
        case refused
    }

    enum Phase: Equatable {
        case waiting
        case receiving
        case busy
    }

    private struct Entry {
        let connection: Connection
        /// Bumped at every change of phase or progress; a queued ticket whose generation differs is stale.
        var generation: UInt64
        var phase: Phase
    }

    private struct Ticket {
        let id: UInt64
        let generation: UInt64
    }

    let maximum: Int
    private var entries: [UInt64: Entry] = [:]
    /// Sheddable connections (waiting or receiving), least recent client activity first, as tickets;
    /// stale tickets are skipped and compacted away.
    private var sheddable: [Ticket] = []
    private var sheddableStart = 0
    private var nextID: UInt64 = 0

    init(maximum: Int) {
        precondition(maximum > 0, "a connection table holds at least one connection")
        self.maximum = maximum
    }

    var openCount: Int { entries.count }
    /// Connections whose request has all arrived and is being answered.
    var busyCount: Int { entries.values.count { $0.phase == .busy } }
    /// Connections with a request head in and its body still arriving.
    var receivingCount: Int { entries.values.count { $0.phase == .receiving } }

    func phase(of id: UInt64) -> Phase? { entries[id]?.phase }

    mutating func open(_ connection: Connection) -> Admission {
        var shed: Connection?
        if entries.count >= maximum {
            guard let stalest = popStalest() else { return .refused }
            shed = entries.removeValue(forKey: stalest)?.connection
        }
        nextID += 1
        entries[nextID] = Entry(connection: connection, generation: 0, phase: .waiting)
        enqueue(nextID, generation: 0)
        return .admitted(id: nextID, shedding: shed)
    }

    /// A request's head arrived: its body (if any) is to come.
    mutating func requestStarted(_ id: UInt64) {
        guard let entry = entries[id], entry.phase == .waiting else { return }
        update(id, to: .receiving)
    }

    /// Some of the body arrived: the client is alive, so it moves to the back of the shedding order.
    mutating func bodyReceived(_ id: UInt64) {
        guard let entry = entries[id], entry.phase == .receiving else { return }
        update(id, to: .receiving)
    }

    /// The whole request arrived: busy until its response is written.
    mutating func requestEnded(_ id: UInt64) {
        guard let entry = entries[id], entry.phase == .receiving else { return }
        update(id, to: .busy)
    }

    /// Its response was written: the connection waits for the next request.
    /// - Returns: true when the request's body had not all arrived: the connection should be closed
    ///   rather than kept reading a body nobody wants.
    @discardableResult
    mutating func responseFinished(_ id: UInt64) -> Bool {
        guard let entry = entries[id] else { return false }
        switch entry.phase {
        case .busy:
            update(id, to: .waiting)
            return false
        case .receiving:
            return true
        case .waiting:
            return false
        }
    }

    mutating func closed(_ id: UInt64) {
        entries[id] = nil
    }

    private mutating func update(_ id: UInt64, to phase: Phase) {
        guard var entry = entries[id] else { return }
        entry.phase = phase
        entry.generation += 1
        entries[id] = entry
        if phase != .busy { enqueue(id, generation: entry.generation) }
    }

    private mutating func enqueue(_ id: UInt64, generation: UInt64) {
        sheddable.append(Ticket(id: id, generation: generation))
        // Stale tickets (closed, busy or active since) pile up with each request and body part, and taken
        // ones before `sheddableStart`: compact once either outgrows the table.
        if sheddableStart > maximum || sheddable.count - sheddableStart > 2 * maximum + 64 {
            sheddable = sheddable[sheddableStart...].filter(isCurrent)
            sheddableStart = 0
        }
    }

    private mutating func popStalest() -> UInt64? {
        while sheddableStart < sheddable.count {
            let ticket = sheddable[sheddableStart]
            sheddableStart += 1
            if isCurrent(ticket) { return ticket.id }
        }
        sheddable.removeAll(keepingCapacity: true)
        sheddableStart = 0
        return nil
    }

    private func isCurrent(_ ticket: Ticket) -> Bool {
        guard let entry = entries[ticket.id] else { return false }
        return entry.phase != .busy && entry.generation == ticket.generation
    }
}
