import Foundation
import HTTPTypes
import Ledger
import Receipts
import Synchronization
import TestSupport
import Testing

@testable import Shop
@testable import ShopServer

@Suite("Per-user limits")
struct UserLimitTests {
    @Test("a token bucket: COUNT at once, then one back every SECONDS/COUNT; other users untouched")
    func bucket() {
        let clock = ManualClock()
        let limiter = UserRateLimiter(RateLimit(count: 3, seconds: 60), now: { clock.now })
        for _ in 0..<3 { #expect(limiter.take("a") == nil) }
        #expect(limiter.take("a") == .seconds(20))
        #expect(limiter.take("b") == nil)
        clock.advance(.seconds(5))
        #expect(limiter.take("a") == .seconds(15))
        clock.advance(.seconds(15))
        #expect(limiter.take("a") == nil)
        #expect(limiter.take("a") != nil)
        #expect(UserRateLimiter(.off).take("a") == nil)
    }

    @Test("a reservation takes the token on admission; refunded, it is back; kept, it is spent")
    func reservations() throws {
        let clock = ManualClock()
        let limiter = UserRateLimiter(RateLimit(count: 2, seconds: 60), now: { clock.now })
        let first = try limiter.admit("a").get()
        let second = try limiter.admit("a").get()
        // Both tokens are out while their uses run: a third is refused before anything is done.
        #expect(throws: UserRateLimiter.Refusal.self) { try limiter.admit("a").get() }
        limiter.release(first, refund: true)
        let third = try limiter.admit("a").get()
        limiter.release(second, refund: false)
        limiter.release(third, refund: false)
        let refused = try #require(throws: UserRateLimiter.Refusal.self) { try limiter.admit("a").get() }
        #expect(refused.retryAfter == .seconds(30) && refused.reason == .noTokens)
    }

    @Test("uses in flight per key are capped, whatever tokens are left")
    func inFlight() throws {
        let limiter = UserRateLimiter(RateLimit(count: 30, seconds: 600), maximumInFlight: 2)
        let one = try limiter.admit("a").get()
        let two = try limiter.admit("a").get()
        let refused = try #require(throws: UserRateLimiter.Refusal.self) { try limiter.admit("a").get() }
        #expect(refused.reason == .tooManyInFlight && refused.retryAfter == .seconds(1))
        _ = try limiter.admit("b").get()
        limiter.release(one, refund: true)
        _ = try limiter.admit("a").get()
        limiter.release(two, refund: true)
    }

    @Test("1,500 admissions at once from one key: exactly COUNT admitted")
    func parallelAdmissions() async {
        let limiter = UserRateLimiter(RateLimit(count: 30, seconds: 600))
        let admitted = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<1500 { group.addTask { (try? limiter.admit("a").get()) != nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(admitted == 30)
    }

    @Test("the table of buckets stays bounded: refilled buckets are forgotten")
    func bounded() {
        let clock = ManualClock()
        let limiter = UserRateLimiter(RateLimit(count: 1, seconds: 1), now: { clock.now })
        for user in 0..<5000 {
            limiter.take("u\(user)")
            clock.advance(.milliseconds(10))
        }
        #expect(limiter.trackedUsers < 2100)
    }

    @Test("past its bound the table forgets the fullest buckets, never every bucket: a spent user stays spent")
    func boundedWithoutReset() {
        let clock = ManualClock()
        let limiter = UserRateLimiter(RateLimit(count: 2, seconds: 3600), maximumUsers: 1000, now: { clock.now })
        // The victim of the reset: spent entirely.
        limiter.take("spent")
        limiter.take("spent")
        // An attacker's many accounts, each with a partly spent bucket.
        for user in 0..<5000 {
            limiter.take("many-\(user)")
            clock.advance(.milliseconds(1))
        }
        #expect(limiter.trackedUsers <= 1000)
        #expect(limiter.take("spent") != nil, "the spent user's bucket is still empty")
    }

    @Test("COUNT/SECONDS and off parse; anything else does not")
    func parsing() {
        #expect(RateLimit(parsing: "6/3600") == RateLimit(count: 6, seconds: 3600))
        #expect(RateLimit(parsing: "off") == .off && RateLimit(parsing: "0") == .off)
        for bad in ["", "6", "6/0", "-1/60", "x/60", "6/60/1", "6/nan", "6/inf", "1/999999999"] {
            #expect(RateLimit(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test("refused proofs: past the limit a user is answered 429 (SeSAC 500) with Retry-After, and not verified")
    func refusedProofs() async throws {
        let prover = CountingProver()
        try await withShopServer(
            configure: { $0.refusedProofLimit = RateLimit(count: 3, seconds: 600) }, prover: prover
        ) { client, _ in
            try await client.signUp("bad")
            try await client.signUp("good")
            for _ in 0..<3 {
                let refused = try await client.api(
                    .post, "/api/v1/purchases", uid: "bad", json: ["signedTransaction": "refuse.me.please"])
                #expect(refused.status == .unprocessableContent)
            }
            let limited = try await client.api(
                .post, "/api/v1/purchases", uid: "bad", json: ["signedTransaction": "refuse.me.please"])
            #expect(limited.status == .tooManyRequests && limited.errorCode == "rate_limited")
            // One token back every 600/3 = 200 s, rounded up: 200 at once, less on a machine slow enough
            // that seconds pass between the requests.
            #expect((190...200).contains(Int(limited.headers[.retryAfter] ?? "") ?? 0), "\(limited.headers)")
            let sesac = try await client.sesac(
                .post, "/v1/user/shop/ios", uid: "bad",
                form: [("receipt", "refuse.me.please"), ("product", "com.memolease.sesac1.sprout1")])
            #expect(sesac.status == .internalServerError)
            #expect((190...200).contains(Int(sesac.headers[.retryAfter] ?? "") ?? 0), "\(sesac.headers)")
            #expect(prover.calls == 3, "a limited user's proofs are not verified")
            let other = try await client.api(
                .post, "/api/v1/purchases", uid: "good", json: ["signedTransaction": "refuse.me.please"])
            #expect(other.status == .unprocessableContent, "another user is not limited")
        }
    }

    @Test("1,500 bad proofs at once from one account: at most the limit's tokens are verified, the rest answered 429")
    func parallelRefusedProofs() async throws {
        let prover = GatedRefusingProver()
        let total = 1500
        try await withShopServer(
            configure: { $0.refusedProofLimit = RateLimit(count: 30, seconds: 600) }, prover: prover
        ) { client, _ in
            try await client.signUp("bad")
            let answered = Counter()
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<total {
                    group.addTask {
                        let answer = try await client.api(
                            .post, "/api/v1/purchases", uid: "bad", json: ["signedTransaction": "refuse.me.please"])
                        answered.add()
                        return answer.status
                    }
                }
                // Every request is either answered or held by the prover: only then do refusals come back,
                // as when proofs take longer than requests take to arrive.
                while answered.value + prover.waiting < total { try await Task.sleep(for: .milliseconds(5)) }
                prover.open()
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(prover.calls <= 30, "verified \(prover.calls) of \(total)")
            #expect(statuses.count(where: { $0 == .tooManyRequests }) == total - prover.calls)
            #expect(statuses.count(where: { $0 == .unprocessableContent }) == prover.calls)
        }
    }

    @Test("accepted purchases and their duplicates are not limited by default")
    func acceptedUnlimited() async throws {
        try await withShopServer { client, _ in
            try await client.signUp("buyer")
            let receipt = ServerTest.stubReceipt(product(.face(1)))
            for _ in 0..<60 {
                let answer = try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "buyer",
                    form: [("receipt", receipt), ("product", product(.face(1)))])
                #expect(answer.status == .ok)
            }
        }
    }
}

/// A count several tasks add to.
final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

/// A prover that refuses everything, each refusal held until the test opens it.
final class GatedRefusingProver: PurchaseOnlyProver {
    private struct State {
        var calls = 0
        var open = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())
    var calls: Int { state.withLock { $0.calls } }
    var waiting: Int { state.withLock { $0.waiters.count } }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state in
                state.calls += 1
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if resumeNow { continuation.resume() }
        }
        throw ReceiptRefusal(.invalidSignature, "refused")
    }
}

/// A clock the test moves.
final class ManualClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)
    var now: ContinuousClock.Instant { instant.withLock { $0 } }
    func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
}

/// A prover that refuses everything and counts how often it was asked.
final class CountingProver: PurchaseOnlyProver {
    private let count = Mutex(0)
    var calls: Int { count.withLock { $0 } }

    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        count.withLock { $0 += 1 }
        throw ReceiptRefusal(.invalidSignature, "refused")
    }

}
