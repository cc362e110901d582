import Foundation
import HTTPTypes
import Receipts
import Synchronization
import TestSupport
import Testing

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
        try await withShopServer(configure: { $0.requestTimeout = .seconds(1) }, prover: prover) { client, _ in
            try await client.signUp("d1")
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
        ) { client, _ in
            try await client.signUp("q1")
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
        let concurrent = Concurrency()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await withTaskExecutorPreference(executor) {
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
