import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import TestSupport
import Testing

@testable import ShopServer

@Suite("Connection limits")
struct ConnectionLimitTests {
    @Test("under the limit every connection is admitted; at it the one waiting longest is shed")
    func shedsOldestWaiting() {
        var table = ConnectionTable<String>(maximum: 3)
        guard case .admitted(let a, nil) = table.open("a"), case .admitted(let b, nil) = table.open("b"),
            case .admitted(_, nil) = table.open("c")
        else { Issue.record("the first three are admitted without shedding"); return }
        table.requestStarted(a)
        table.requestEnded(a)
        guard case .admitted(_, let shed) = table.open("d") else { Issue.record("d is admitted"); return }
        #expect(shed == "b", "a is busy, so b is the oldest waiting")
        #expect(table.openCount == 3)
        table.responseFinished(a)  // a waits again, now the newest waiting
        guard case .admitted(_, let next) = table.open("e") else { Issue.record("e is admitted"); return }
        #expect(next == "c")
        _ = b
    }

    @Test("when every connection is busy a newcomer is refused; a closed one frees its place")
    func refusesWhenAllBusy() {
        var table = ConnectionTable<Int>(maximum: 2)
        var ids: [UInt64] = []
        for connection in 0..<2 {
            guard case .admitted(let id, nil) = table.open(connection) else {
                Issue.record("admitted")
                return
            }
            table.requestStarted(id)
            table.requestEnded(id)
            ids.append(id)
        }
        guard case .refused = table.open(9) else {
            Issue.record("refused while all are busy")
            return
        }
        table.closed(ids[0])
        guard case .admitted(_, nil) = table.open(10) else {
            Issue.record("a closed one's place is free")
            return
        }
        #expect(table.openCount == 2 && table.busyCount == 1)
    }

    @Test("stale waiting tickets stay bounded through many requests on one connection")
    func ticketsStayBounded() {
        var table = ConnectionTable<Int>(maximum: 2)
        guard case .admitted(let id, nil) = table.open(1) else {
            Issue.record("admitted")
            return
        }
        for _ in 0..<100_000 {
            table.requestStarted(id)
            table.bodyReceived(id)
            table.requestEnded(id)
            table.responseFinished(id)
        }
        guard case .admitted(_, nil) = table.open(2) else {
            Issue.record("admitted")
            return
        }
        guard case .admitted(_, let shed) = table.open(3) else {
            Issue.record("admitted")
            return
        }
        #expect(shed == 1)
    }

    @Test("a body that stalls is shed before a keep-alive client just answered; a body that arrives is not")
    func stalledBodiesShedFirst() {
        var table = ConnectionTable<String>(maximum: 3)
        guard case .admitted(let stalled, nil) = table.open("stalled"),
            case .admitted(let uploading, nil) = table.open("uploading"),
            case .admitted(let buyer, nil) = table.open("buyer")
        else { Issue.record("the first three are admitted without shedding"); return }
        // Heads that declare a body; one sends nothing more, the other keeps sending.
        table.requestStarted(stalled)
        table.requestStarted(uploading)
        // The buyer's purchase is answered: it waits for its next request, the freshest of all.
        table.requestStarted(buyer)
        table.requestEnded(buyer)
        table.responseFinished(buyer)
        table.bodyReceived(uploading)
        #expect(table.receivingCount == 2 && table.busyCount == 0)
        guard case .admitted(_, let first) = table.open("newcomer") else { Issue.record("admitted"); return }
        #expect(first == "stalled")
        guard case .admitted(_, let second) = table.open("another") else { Issue.record("admitted"); return }
        #expect(second == "buyer", "quiet since its answer, before the upload's last bytes")
        _ = (stalled, uploading)
    }

    @Test("a response written while its request's body still arrives says to close the connection")
    func answeredMidBodyCloses() {
        var table = ConnectionTable<Int>(maximum: 2)
        guard case .admitted(let id, nil) = table.open(1) else { Issue.record("admitted"); return }
        table.requestStarted(id)
        table.bodyReceived(id)
        #expect(table.phase(of: id) == .receiving)
        let closeMidBody = table.responseFinished(id)
        #expect(closeMidBody, "answered (a timeout, say) before the body came: close")
        guard case .admitted(let other, nil) = table.open(2) else { Issue.record("admitted"); return }
        table.requestStarted(other)
        table.requestEnded(other)
        #expect(table.phase(of: other) == .busy)
        let closeAfterWhole = table.responseFinished(other)
        #expect(!closeAfterWhole, "the whole request came: keep alive")
        #expect(table.phase(of: other) == .waiting)
    }

    // Runs only when asked for (SHOPLEDGER_IN_PROCESS_FLOOD=1): it asserts wall-clock times (shed within
    // 1.5 s, none left 3 s after a 2 s idle timeout, NIO's own timer), which a loaded machine stretches.
    // The same flood, larger, runs against the real `shopledger serve` in
    // FaultTests/HostileRequestTests.halfOpenFlood. (It used to be off for another reason too: stopping
    // the in-process server with accepted connections still queued trapped inside NIO, "Deinited
    // NIOAsyncWriter without calling finish()"; ShopHTTP1Channel closes those now, ServerStopTests.)
    @Test(
        "half-open connections: closed after the idle timeout, shed at the limit; /healthz still answers",
        .enabled(if: ProcessInfo.processInfo.environment["SHOPLEDGER_IN_PROCESS_FLOOD"] == "1"))
    func halfOpenFlood() async throws {
        try await withTestDatabase { db in
            var configuration = ServerTest.configuration()
            configuration.maxConnections = 40
            configuration.idleTimeout = .seconds(2)
            let app = try buildApplication(
                configuration: configuration, client: db.client, logger: ServerTest.quietLogger)
            try await app.test(.live) { client in
                let port = try #require(client.port)
                let opened = ContinuousClock.now
                let flood = try HalfOpenConnections(count: 200, port: port)
                defer { flood.close() }
                #expect(flood.descriptors.count == 200)
                let started = ContinuousClock.now
                let health = try await client.send(.get, "/healthz")
                #expect(health.status == .ok)
                #expect(ContinuousClock.now - started < .seconds(1), "healthz answered within 1 s")
                // The limit: at most 40 open, whichever 40, well before the idle timeout could close them
                // (on a loaded machine the server takes a while to shed 160: wait up to 1.5 s from the flood).
                while flood.openCount > 40, ContinuousClock.now - opened < .milliseconds(1500) {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(flood.openCount <= 40, "shed to the limit before the 2 s idle timeout")
                // The idle timeout: none left after it.
                try await Task.sleep(for: .seconds(3))
                #expect(flood.openCount == 0)
            }
        }
    }
}
