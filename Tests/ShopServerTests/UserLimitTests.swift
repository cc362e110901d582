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
        #expect(limiter.check("b") == nil)
        clock.advance(.seconds(5))
        #expect(limiter.check("a") == .seconds(15))
        clock.advance(.seconds(15))
        #expect(limiter.take("a") == nil)
        #expect(limiter.take("a") != nil)
        #expect(UserRateLimiter(.off).take("a") == nil)
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
