import Synchronization
import Testing

@testable import Shop

@Suite("Per-user limits: the token buckets")
struct UserRateLimiterTests {
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
}

/// A clock the test moves.
final class ManualClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)
    var now: ContinuousClock.Instant { instant.withLock { $0 } }
    func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
}
