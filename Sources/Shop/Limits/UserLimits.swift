/// The per-user limits of a server (`serve`'s `--restore-limit`, `--refused-proof-limit`, `--purchase-limit`).
package struct UserLimits: Sendable {
    /// Restores: each asks Apple's App Store Server API, whose quota the whole app shares.
    package let restores: UserRateLimiter
    /// Refused proofs: each costs a verification (CPU); a user over it is not verified until a token
    /// comes back. Accepted proofs and duplicates spend nothing.
    package let refusedProofs: UserRateLimiter
    /// Every purchase request, accepted or not; off by default (a load test posts thousands per user).
    package let purchases: UserRateLimiter

    package init(restores: RateLimit, refusedProofs: RateLimit, purchases: RateLimit) {
        self.restores = UserRateLimiter(restores)
        self.refusedProofs = UserRateLimiter(refusedProofs)
        self.purchases = UserRateLimiter(purchases)
    }

    /// No limits (tests of other things).
    package init() {
        restores = UserRateLimiter(.off)
        refusedProofs = UserRateLimiter(.off)
        purchases = UserRateLimiter(.off)
    }
}

/// A request turned away by a per-user limit: 429 with `Retry-After` on the JSON surface, 500 (the
/// SeSAC clients' "server error, try later") with `Retry-After` on the SeSAC surface.
package struct RateLimitedError: Error, Sendable, CustomStringConvertible {
    /// `restore`, `refused_proofs` or `purchases`.
    package let limit: String
    package let retryAfter: Duration

    package init(limit: String, retryAfter: Duration) {
        self.limit = limit
        self.retryAfter = retryAfter
    }

    /// Whole seconds, at least 1, as `Retry-After` carries them.
    package var retryAfterSeconds: Int {
        let (seconds, attoseconds) = retryAfter.components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }

    package var description: String {
        switch limit {
        case "refused_proofs":
            "too many refused proofs from this account; try again in \(retryAfterSeconds) s"
        case "restore":
            "too many restores from this account; try again in \(retryAfterSeconds) s"
        default:
            "too many purchase requests from this account; try again in \(retryAfterSeconds) s"
        }
    }
}
