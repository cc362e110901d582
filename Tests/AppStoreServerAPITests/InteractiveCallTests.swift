import Foundation
import Receipts
import TestSupport
import Testing

@testable import AppStoreServerAPI

/// The client's manners with Apple's quota and a caller's time: calls inside a request (``within``) end
/// by their deadline and leave a share of the quota to background work; "not found" is remembered.
@Suite("AppStoreServerAPI client: deadlines, the shared quota, remembered not-found")
struct InteractiveCallTests {
    typealias Transaction = FakeAppStore.Transaction

    // On a clock the test moves, the deadline one of its instants: what the client waits for is a sleeper on
    // it, and a call that returns while the clock stands still did not wait (the time limit ends one that does).
    @Test(
        "A call within a deadline gives up by it: a hung Apple, every attempt and backoff cut to the time left",
        .timeLimit(.minutes(1)))
    func hungAppleWithinDeadline() async throws {
        let clock = TestClock()
        try await AppStoreServerAPIClientTests().withFake(
            clock: clock,
            prepare: { $0.add(Transaction(id: "1", productId: APITest.product(2), customer: "a")) },
            configure: {
                $0.requestTimeout = .seconds(100)
                $0.maxAttempts = 4
            }
        ) { fake, client in
            // Each attempt would be answered after 120 s (or when this test ends), and may wait 100 s.
            fake.script(.hang(.seconds(120)), .hang(.seconds(120)), .hang(.seconds(120)), .hang(.seconds(120)))
            let deadline = clock.now + .milliseconds(600)
            let call = Task { try await client.within(deadline).transactionInfo("1") }
            // The attempt waits for the time left, 600 ms, not its 100 s timeout.
            try #require(await fake.waitForRequests(1), "the request reaches the fake, which hangs")
            let attemptEnds = try #require(await clock.waitForSleeper(wakingAt: deadline, tolerance: .zero))
            clock.advance(to: attemptEnds)
            // With no time left it neither backs off nor tries again: the call ends with the clock at the deadline.
            let error = await #expect(throws: AppStoreServerAPIError.self) { try await call.cancellableValue }
            #expect(error?.code == .timeout, "\(String(describing: error))")
            #expect(clock.now == deadline && clock.sleepers == 0)
            #expect(fake.requests.count == 1, "no attempt after the deadline")
            fake.clearFaults()
        }
    }

    @Test(
        "A Retry-After past the deadline is not waited for; Apple's hold is kept for the next callers too",
        .timeLimit(.minutes(1)))
    func retryAfterPastDeadline() async throws {
        let clock = TestClock()
        try await AppStoreServerAPIClientTests().withFake(
            clock: clock, prepare: { $0.add(Transaction(id: "1", productId: APITest.product(2), customer: "a")) }
        ) { fake, client in
            let start = clock.now
            let retryAt = clock.date.addingTimeInterval(1.5)
            fake.script(.rateLimitedUntil(retryAt))
            // Returned with the clock standing still: no wait at all for a Retry-After past the deadline.
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.within(start + .seconds(1)).transactionInfo("1")
            }
            #expect(error?.code == .rateLimited && error?.retryAt != nil, "\(String(describing: error))")
            #expect(clock.now == start)
            // Apple said 1.5 s: another call inside a request fails at once without asking Apple again.
            let again = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.within(start + .milliseconds(500)).transactionInfo("1")
            }
            #expect(again?.code == .rateLimited)
            #expect(fake.requests.count == 1)
            // Background work waits out the hold, 1.5 s from Apple's answer, and asks Apple only then.
            let background = Task { try await client.transactionInfo("1") }
            let holdEnds = try #require(await clock.waitForSleeper(wakingAt: start + .milliseconds(1500)))
            clock.advance(to: holdEnds - .milliseconds(1))
            #expect(clock.sleepers == 1 && fake.requests.count == 1, "asked Apple before its Retry-After")
            clock.advance(to: holdEnds)
            let answer = try await background.cancellableValue
            #expect(answer.transactions.map(\.transactionId) == ["1"])
            #expect(fake.requests.count == 2)
        }
    }

    // On a clock the test moves: a call that returns without the clock moving did not wait (a wait on
    // it would last until the test advanced it; the time limit ends a test broken that way).
    @Test(
        "When the quota runs short, background work goes first; a call inside a request fails fast",
        .timeLimit(.minutes(1)))
    func backgroundGoesFirst() async throws {
        // A bucket of 5 a second: calls inside a request leave 1 (a fifth) to background work.
        let clock = TestClock()
        let limiter = RateLimiter(
            limits: RateLimits(perSecond: [.transactionInfo: 5], sandboxFactor: 1), clock: clock)
        let far = clock.now + .seconds(60)
        for _ in 0..<4 { try await limiter.acquire(.transactionInfo, sandbox: false, deadline: far) }
        let starved = await #expect(throws: AppStoreServerAPIError.self) {
            try await limiter.acquire(.transactionInfo, sandbox: false, deadline: clock.now + .milliseconds(100))
        }
        #expect(starved?.code == .rateLimited, "\(String(describing: starved))")
        // The token kept back is the background's, at once; the next background call waits for a refill
        // (a fifth of a second at 5 a second), and not a moment less.
        try await limiter.acquire(.transactionInfo, sandbox: false)
        let refill = Task { try await limiter.acquire(.transactionInfo, sandbox: false) }
        try #require(await clock.waitForSleepers(1), "the background call waits for a token")
        clock.advance(by: .milliseconds(199))
        #expect(clock.sleepers == 1, "still waiting 1 ms before the refill")
        clock.advance(by: .milliseconds(1))
        try await refill.value
    }

    @Test("Apple's not-found is remembered per id and environment: asked again, Apple is not")
    func notFoundRemembered() async throws {
        try await AppStoreServerAPIClientTests().withFake { fake, client in
            for _ in 0..<3 {
                let error = await #expect(throws: AppStoreServerAPIError.self) {
                    try await client.transactionInfo("404404")
                }
                #expect(error?.isNotFound == true)
            }
            // Production, then the sandbox, once.
            #expect(fake.requests.map(\.environment) == ["production", "sandbox"])
            // Another id is asked; a copy made for a request shares the memory.
            fake.resetRequests()
            _ = try? await client.within(.now + .seconds(2)).transactionHistory("404404")
            _ = try? await client.transactionInfo("505505", in: .sandbox)
            #expect(fake.requests.map(\.path) == ["/inApps/v1/transactions/505505"])
        }
    }

    @Test("A memory of zero remembers nothing")
    func notFoundMemoryOff() async throws {
        try await AppStoreServerAPIClientTests().withFake(configure: { $0.notFoundMemory = .zero }) { fake, client in
            for _ in 0..<2 { _ = try? await client.transactionInfo("404404", in: .production) }
            #expect(fake.requests.count == 2)
        }
    }
}
