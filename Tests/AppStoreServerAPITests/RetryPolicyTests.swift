import Foundation
import Testing

@testable import AppStoreServerAPI

/// The client's retry decisions, case by case, without a server or a clock: what Apple answered (or
/// that it did not), the attempt, the deadline, and what the client does next. The fake-Apple suites
/// (AppleBudgetTests, InteractiveCallTests, SyncFailureTests) check that `send` does what is decided.
@Suite("App Store Server API retry decisions")
struct RetryPolicyTests {
    static let policy = RetryPolicy(
        maxAttempts: 4, initialBackoff: .milliseconds(500), maxRetryWait: .seconds(30),
        shortestAttempt: .milliseconds(50))
    static let now = ContinuousClock.now
    static let date = Date(timeIntervalSince1970: 1_800_000_000)

    static func apiError(_ status: Int) -> AppStoreServerAPIError {
        AppStoreServerAPIError(.apiError, "HTTP \(status)", httpStatus: status)
    }

    static func answered(_ status: Int, retryAfter seconds: Double? = nil) -> RetryPolicy.Outcome {
        .answered(status: status, error: apiError(status), retryAt: seconds.map { date.addingTimeInterval($0) })
    }

    static let timeout = AppStoreServerAPIError(.timeout, "getTransactionInfo did not answer in time")

    static func decide(
        _ outcome: RetryPolicy.Outcome, attempt: Int = 1, renewedToken: Bool = false, deadlineIn: Duration? = nil,
        policy: RetryPolicy = policy
    ) -> RetryPolicy.Decision {
        policy.decide(
            after: outcome, attempt: attempt, renewedToken: renewedToken, deadline: deadlineIn.map { now + $0 },
            now: now, date: date)
    }

    static func rateLimited(retryAfter seconds: Double?) -> AppStoreServerAPIError {
        var error = apiError(429)
        error.code = .rateLimited
        error.retryAt = seconds.map { date.addingTimeInterval($0) }
        return error
    }

    @Test("5xx and no answer are retried with backoff doubling from 0.5 s, until the attempts run out")
    func backoff() {
        for outcome in [Self.answered(500), Self.answered(503), .noAnswer(Self.timeout)] {
            let failure: AppStoreServerAPIError
            if case .noAnswer(let error) = outcome { failure = error } else { failure = Self.apiError(outcome.status) }
            let waits: [(attempt: Int, wait: Duration)] = [(1, .milliseconds(500)), (2, .seconds(1)), (3, .seconds(2))]
            for (attempt, wait) in waits {
                #expect(
                    Self.decide(outcome, attempt: attempt)
                        == RetryPolicy.Decision(.retry(after: wait, failure: failure)))
            }
            #expect(Self.decide(outcome, attempt: 4) == RetryPolicy.Decision(.giveUp(failure)))
        }
    }

    @Test("the backoff is cut to the longest wait")
    func backoffCut() {
        var policy = Self.policy
        policy.maxAttempts = 10
        #expect(
            Self.decide(Self.answered(502), attempt: 9, policy: policy)
                == RetryPolicy.Decision(.retry(after: .seconds(30), failure: Self.apiError(502))))
    }

    @Test("a 5xx's Retry-After replaces the backoff, cut to the longest wait; one already past is no wait")
    func serverErrorRetryAfter() {
        let waits: [(retryAfter: Double, wait: Duration)] = [(3, .seconds(3)), (100, .seconds(30)), (-5, .zero)]
        for (retryAfter, wait) in waits {
            #expect(
                Self.decide(Self.answered(503, retryAfter: retryAfter))
                    == RetryPolicy.Decision(.retry(after: wait, failure: Self.apiError(503))))
        }
    }

    @Test("429 without Retry-After: retried with backoff as rate limited; the endpoint is not held")
    func rateLimitedWithoutRetryAfter() {
        #expect(
            Self.decide(Self.answered(429), attempt: 2)
                == RetryPolicy.Decision(.retry(after: .seconds(1), failure: Self.rateLimited(retryAfter: nil))))
        #expect(
            Self.decide(Self.answered(429), attempt: 4)
                == RetryPolicy.Decision(.giveUp(Self.rateLimited(retryAfter: nil))))
    }

    @Test("429 with Retry-After: the endpoint is held until then and the call waits that long")
    func rateLimitedWithRetryAfter() {
        #expect(
            Self.decide(Self.answered(429, retryAfter: 2))
                == RetryPolicy.Decision(
                    .retry(after: .seconds(2), failure: Self.rateLimited(retryAfter: 2)),
                    holdEndpointUntil: Self.now + .seconds(2)))
        // The last attempt: no retry, but the endpoint is held all the same.
        #expect(
            Self.decide(Self.answered(429, retryAfter: 2), attempt: 4)
                == RetryPolicy.Decision(
                    .giveUp(Self.rateLimited(retryAfter: 2)), holdEndpointUntil: Self.now + .seconds(2)))
    }

    @Test("429 asking for longer than the longest wait: given up at once, the endpoint held for the longest wait")
    func rateLimitedTooLong() {
        var expected = Self.rateLimited(retryAfter: 60)
        let retryAt = Self.date.addingTimeInterval(60)
        expected.message = "Apple asks to wait until \(retryAt), longer than the configured wait"
        #expect(
            Self.decide(Self.answered(429, retryAfter: 60))
                == RetryPolicy.Decision(.giveUp(expected), holdEndpointUntil: Self.now + .seconds(30)))
    }

    @Test("429 asking for a time past the call's deadline: given up at once")
    func rateLimitedPastDeadline() {
        var expected = Self.rateLimited(retryAfter: 2)
        expected.message = "Apple asks to wait until \(Self.date.addingTimeInterval(2)), past this call's deadline"
        #expect(
            Self.decide(Self.answered(429, retryAfter: 2), deadlineIn: .seconds(2))
                == RetryPolicy.Decision(.giveUp(expected), holdEndpointUntil: Self.now + .seconds(2)))
        // Inside the deadline, but with less than the shortest attempt left after the wait: given up too.
        #expect(
            Self.decide(Self.answered(429, retryAfter: 2), deadlineIn: .milliseconds(2_040))
                == RetryPolicy.Decision(
                    .giveUp(Self.rateLimited(retryAfter: 2)), holdEndpointUntil: Self.now + .seconds(2)))
        #expect(
            Self.decide(Self.answered(429, retryAfter: 2), deadlineIn: .milliseconds(2_060))
                == RetryPolicy.Decision(
                    .retry(after: .seconds(2), failure: Self.rateLimited(retryAfter: 2)),
                    holdEndpointUntil: Self.now + .seconds(2)))
    }

    @Test("a retry that could not start the shortest attempt before the deadline is not waited for")
    func deadline() {
        let timeout = RetryPolicy.Outcome.noAnswer(Self.timeout)
        #expect(Self.decide(timeout, deadlineIn: .milliseconds(550)) == RetryPolicy.Decision(.giveUp(Self.timeout)))
        #expect(
            Self.decide(timeout, deadlineIn: .milliseconds(551))
                == RetryPolicy.Decision(.retry(after: .milliseconds(500), failure: Self.timeout)))
        #expect(
            Self.decide(Self.answered(503, retryAfter: 5), deadlineIn: .seconds(5))
                == RetryPolicy.Decision(.giveUp(Self.apiError(503))))
    }

    @Test("other statuses are not retried, at any attempt", arguments: [400, 403, 404, 409, 418])
    func notRetried(status: Int) {
        #expect(Self.decide(Self.answered(status)) == RetryPolicy.Decision(.giveUp(Self.apiError(status))))
        #expect(
            Self.decide(Self.answered(status, retryAfter: 1)) == RetryPolicy.Decision(.giveUp(Self.apiError(status))))
    }

    @Test("the first 401 renews the token without counting an attempt; a second is given up")
    func unauthorized() {
        #expect(Self.decide(Self.answered(401)) == RetryPolicy.Decision(.renewToken))
        #expect(Self.decide(Self.answered(401), attempt: 4) == RetryPolicy.Decision(.renewToken))
        #expect(
            Self.decide(Self.answered(401), renewedToken: true) == RetryPolicy.Decision(.giveUp(Self.apiError(401))))
    }
}

extension RetryPolicy.Outcome {
    fileprivate var status: Int {
        if case .answered(let status, _, _) = self { return status }
        return 0
    }
}
