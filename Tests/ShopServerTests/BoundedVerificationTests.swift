import Foundation
import HTTPTypes
import Ledger
import Receipts
import Synchronization
import TestSupport
import Testing

@testable import Shop
@testable import ShopServer

/// Proofs are verified on threads of their own, at most `verificationThreads` at once, and a request is
/// answered at its deadline whether or not its verification has stopped (docs/security.md). On main a
/// verification that ignored cancellation held its request, its cooperative thread and `/healthz`.
@Suite("Bounded verification")
struct BoundedVerificationTests {
    @Test("a request is answered at its deadline while its verification runs on")
    func answeredAtDeadline() async throws {
        let prover = BlockingProver()
        defer { prover.release() }
        try await withShopServer(configure: { $0.requestTimeout = .seconds(1) }, prover: prover) { client, db in
            // In the ledger, not through the 1 s server (see queuedPastDeadline).
            _ = try await LedgerStore(client: db.client).register(uid: "d1", profile: try UserProfile(json: "{}"))
            let answer = try await firstOf(seconds: 15, fallback: prover.release) {
                try await client.api(.post, "/api/v1/purchases", uid: "d1", json: ["signedTransaction": "a.b.c"])
            }
            #expect(answer?.status == .serviceUnavailable && answer?.errorCode == "request_timeout")
            #expect(prover.running == 1, "the verification was still running when the request was answered")
        }
    }

    @Test("verifications that do not stop leave /healthz and other requests their threads")
    func healthWhileVerifying() async throws {
        let prover = BlockingProver()
        defer { prover.release() }
        try await withShopServer(
            configure: {
                $0.requestTimeout = .seconds(30)
                $0.verificationThreads = 2
            }, prover: prover
        ) { client, _ in
            try await client.signUp("h1")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        _ = try await client.api(
                            .post, "/api/v1/purchases", uid: "h1", json: ["signedTransaction": "a.b.c"])
                    }
                }
                try await prover.waitUntilRunning(2)
                let health = try await firstOf(seconds: 15, fallback: prover.release) {
                    try await client.send(.get, "/healthz")
                }
                #expect(health?.status == .ok)
                let me = try await firstOf(seconds: 15, fallback: prover.release) {
                    try await client.api(.get, "/api/v1/me", uid: "h1")
                }
                #expect(me?.status == .ok)
                #expect(prover.running == 2, "no more verifications at once than verificationThreads")
                prover.release()
                try await group.waitForAll()
            }
            #expect(prover.started == 4)
        }
    }

    @Test("a verification still queued at its request's deadline never starts")
    func queuedPastDeadline() async throws {
        let prover = BlockingProver()
        defer { prover.release() }
        try await withShopServer(
            configure: {
                $0.requestTimeout = .seconds(1)
                $0.verificationThreads = 1
            }, prover: prover
        ) { client, db in
            // Registered in the ledger, not through the server: under a full parallel run a sign-up took more
            // than this test's 1 s request timeout (a clean clone's run, "sign-up of q1: 500 request_timeout"),
            // and the sign-up is not what the test is about.
            _ = try await LedgerStore(client: db.client).register(uid: "q1", profile: try UserProfile(json: "{}"))
            async let first = client.api(.post, "/api/v1/purchases", uid: "q1", json: ["signedTransaction": "a.b.c"])
            try await prover.waitUntilRunning(1)
            let second = try await client.api(
                .post, "/api/v1/purchases", uid: "q1", json: ["signedTransaction": "d.e.f"])
            #expect(second.status == .serviceUnavailable)
            #expect(try await first.status == .serviceUnavailable)
            prover.release()
            try await Task.sleep(for: .milliseconds(300))
            #expect(prover.started == 1, "the queued verification was dropped, not run late")
        }
    }

    @Test("the executor runs no more jobs at once than its threads, and its threads end when idle")
    func executorBounds() async throws {
        let executor = VerificationExecutor(maximumThreads: 2, idleTimeout: 0.2)
        let lane = executor.lane(.purchases)
        let concurrent = Concurrency()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await withTaskExecutorPreference(lane) {
                        concurrent.enter()
                        usleep(20_000)  // blocking: holds its thread
                        concurrent.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(concurrent.peak == 2)
        let idle = ContinuousClock.now
        while executor.threadCount > 0, ContinuousClock.now - idle < .seconds(10) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(executor.threadCount == 0)
    }
}

extension BoundedVerificationTests {
    @Test("a purchase's verification runs before the notifications queued ahead of it")
    func purchasesFirst() async throws {
        let executor = VerificationExecutor(maximumThreads: 1)
        let inner = OrderingProver()
        defer { inner.release() }
        let prover = BoundedProver(inner: inner, executor: executor)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try? await prover.verifyNotification("n0") }
            try await inner.waitUntilRunning(1)
            for index in 1...8 { group.addTask { _ = try? await prover.verifyNotification("n\(index)") } }
            try await Self.waitUntil { executor.queuedJobs == 8 }
            group.addTask { _ = try? await prover.verifyTransaction("purchase") }
            try await Self.waitUntil { executor.queuedJobs == 9 }
            inner.release()
            try await group.waitForAll()
        }
        #expect(inner.order.prefix(2) == ["n0", "purchase"], "\(inner.order)")
    }

    @Test("notifications run on their share of the threads: a purchase finds the other one free")
    func notificationsShare() async throws {
        let executor = VerificationExecutor(maximumThreads: 2)
        #expect(executor.notificationThreads == 1)
        let inner = OrderingProver()
        defer { inner.release() }
        let prover = BoundedProver(inner: inner, executor: executor)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<4 { group.addTask { _ = try? await prover.verifyNotification("n\(index)") } }
            try await inner.waitUntilRunning(1)
            try await Self.waitUntil { executor.queuedJobs == 3 }
            // One notification holds its thread, three wait, and the second thread is a purchase's.
            group.addTask { _ = try? await prover.verifyTransaction("purchase") }
            try await inner.waitUntilRunning(2)
            #expect(inner.order.count == 2 && inner.order.last == "purchase", "\(inner.order)")
            #expect(executor.queuedJobs == 3, "the queued notifications did not take the free thread")
            inner.release()
            try await group.waitForAll()
        }
        #expect(inner.order.count == 5)
    }

    @Test("notifications: refusals per address are reservations; past the in-flight cap, busy")
    func notificationAdmission() throws {
        let admission = NotificationAdmission(refusals: RateLimit(count: 2, seconds: 600), maximumInFlight: 3)
        let attacker = IPAddress("203.0.113.7")
        let apple = IPAddress("17.32.1.9")
        // Apple's verify and give their tokens back: never limited.
        for _ in 0..<10 { admission.release(try admission.admitNow(from: apple), verified: true) }
        let first = try admission.admitNow(from: attacker)
        let second = try admission.admitNow(from: attacker)
        // Both tokens are out while their verifications run: a third is turned away before it is read.
        #expect(throws: RateLimitedError.self) { try admission.admitNow(from: attacker) }
        admission.release(first, verified: false)
        admission.release(second, verified: false)
        #expect(throws: RateLimitedError.self) { try admission.admitNow(from: attacker) }
        // Whoever sends them, at most three at once.
        let held = try ["198.51.100.1", "198.51.100.2", "17.32.1.9"].map { try admission.admitNow(from: IPAddress($0)) }
        #expect(throws: VerificationBusy.self) { try admission.admitNow(from: IPAddress("198.51.100.3")) }
        for ticket in held { admission.release(ticket, verified: true) }
        #expect(admission.inFlightCount == 0)
        // One IPv6 host holds a /64: its addresses share one allowance.
        #expect(
            NotificationAdmission.source(IPAddress("2001:db8:1:2::1"))
                == NotificationAdmission.source(IPAddress("2001:db8:1:2:ffff::9")))
        #expect(
            NotificationAdmission.source(IPAddress("2001:db8:1:2::1"))
                != NotificationAdmission.source(IPAddress("2001:db8:1:3::1")))
    }

    @Test("an address past its refused-notification allowance is answered 429 and not verified")
    func refusedNotifications() async throws {
        let prover = CountingProver()
        try await withShopServer(
            configure: { $0.refusedNotificationLimit = RateLimit(count: 3, seconds: 600) }, prover: prover
        ) { client, _ in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<5 {
                statuses.append(
                    try await client.api(
                        .post, "/api/v1/notifications/app-store", json: ["signedPayload": "junk.junk.junk"]
                    ).status)
            }
            #expect(statuses == [.badRequest, .badRequest, .badRequest, .tooManyRequests, .tooManyRequests])
            #expect(prover.calls == 3)
        }
    }

    /// Polls `condition` (state the test waits for, not a time it measures); gives up after 15 s.
    static func waitUntil(_ condition: () -> Bool) async throws {
        let start = ContinuousClock.now
        while !condition() {
            guard ContinuousClock.now - start < .seconds(15) else { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// A prover that notes the order proofs are verified in; every verification holds its thread until
/// released (30 s at most), as CPU-bound work does.
final class OrderingProver: PurchaseProver {
    private let state = Mutex((order: [String](), running: 0, released: false))

    var order: [String] { state.withLock { $0.order } }

    func release() { state.withLock { $0.released = true } }

    func waitUntilRunning(_ count: Int) async throws {
        try await BoundedVerificationTests.waitUntil { state.withLock { $0.running } >= count }
    }

    private func verify(_ name: String) -> ReceiptRefusal {
        state.withLock {
            $0.order.append(name)
            $0.running += 1
        }
        let start = ContinuousClock.now
        while !state.withLock({ $0.released }), ContinuousClock.now - start < .seconds(30) { usleep(1_000) }
        state.withLock { $0.running -= 1 }
        return ReceiptRefusal(.invalidSignature, "refused")
    }

    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        throw verify(receipt)
    }
    func proveEach(receipt: String) async throws(ReceiptRefusal) -> [ProvenEntry] { throw verify(receipt) }
    func verifyTransaction(_ jws: String) async throws(ReceiptRefusal) -> VerifiedTransaction { throw verify(jws) }
    func verifyNotification(_ signedPayload: String) async throws(ReceiptRefusal) -> VerifiedNotification {
        throw verify(signedPayload)
    }
}

/// How many jobs run at once, and the most that did.
final class Concurrency: Sendable {
    private let state = Mutex((now: 0, peak: 0))
    var peak: Int { state.withLock { $0.peak } }
    func enter() {
        state.withLock {
            $0.now += 1
            $0.peak = max($0.peak, $0.now)
        }
    }
    func leave() { state.withLock { $0.now -= 1 } }
}

/// A prover whose verifications hold their thread, ignoring cancellation, until released (or for 30 s
/// at most, so that a server that waits for them fails its test instead of hanging it): work that does
/// not stop at its deadline.
final class BlockingProver: PurchaseOnlyProver {
    private let state = Mutex((started: 0, running: 0, released: false))

    var started: Int { state.withLock { $0.started } }
    var running: Int { state.withLock { $0.running } }

    func release() { state.withLock { $0.released = true } }

    func waitUntilRunning(_ count: Int) async throws {
        let start = ContinuousClock.now
        while running < count {
            guard ContinuousClock.now - start < .seconds(15) else { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        state.withLock {
            $0.started += 1
            $0.running += 1
        }
        let start = ContinuousClock.now
        while !state.withLock({ $0.released }), ContinuousClock.now - start < .seconds(30) { usleep(2_000) }
        state.withLock { $0.running -= 1 }
        throw ReceiptRefusal(.invalidSignature, "blocked")
    }

}

/// The value of `body`, or nil when it takes more than `seconds`; then `fallback` runs (it releases
/// what `body` waits for, so that a failing test ends instead of hanging).
func firstOf<T: Sendable>(
    seconds: Int, fallback: @escaping @Sendable () -> Void, _ body: @escaping @Sendable () async throws -> T
) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = try await group.next() ?? nil
        if first == nil { fallback() }
        group.cancelAll()
        while try await group.next() != nil {}
        return first
    }
}
