/// The per-user limits of a server (`serve`'s `--restore-limit`, `--refused-proof-limit`,
/// `--purchase-limit`, `--price-lookup-limit`).
package struct UserLimits: Sendable {
    /// How many of one user's proofs may be admitted for verification at once (in flight), whatever
    /// their refused-proof allowance has left: a user's burst queues that many, not thousands, ahead of
    /// everyone else's.
    package static let proofsInFlight = 8

    /// Restores: each asks Apple's App Store Server API, whose quota the whole app shares.
    package let restores: UserRateLimiter
    /// Refused proofs: each costs a verification (CPU). A token is taken when a proof is admitted and
    /// given back when it is accepted (or its verification is cut short), so a user's proofs are never
    /// verified past the allowance however many arrive at once; at most ``proofsInFlight`` at once.
    package let refusedProofs: UserRateLimiter
    /// Every purchase request, accepted or not; off by default (a load test posts thousands per user).
    package let purchases: UserRateLimiter
    /// Calls to Apple's API made inside a user's purchase requests (pricing a classic receipt's new
    /// entries): past it, the entries are recorded unpriced (a sync prices them) rather than refused.
    package let priceLookups: UserRateLimiter

    package init(
        restores: RateLimit, refusedProofs: RateLimit, purchases: RateLimit, priceLookups: RateLimit = .off,
        proofsInFlight: Int? = UserLimits.proofsInFlight
    ) {
        self.restores = UserRateLimiter(restores)
        self.refusedProofs = UserRateLimiter(refusedProofs, maximumInFlight: proofsInFlight)
        self.purchases = UserRateLimiter(purchases)
        self.priceLookups = UserRateLimiter(priceLookups)
    }

    /// No limits (tests of other things).
    package init() {
        self.init(restores: .off, refusedProofs: .off, purchases: .off, priceLookups: .off, proofsInFlight: nil)
    }
}

/// A request turned away by a per-user (or per-address) limit: 429 with `Retry-After` on the JSON surface, 500 (the
/// SeSAC clients' "server error, try later") with `Retry-After` on the SeSAC surface.
package struct RateLimitedError: Error, Sendable, CustomStringConvertible {
    /// `restore`, `refused_proofs`, `proofs_in_flight`, `purchases` or `refused_notifications`.
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
        case "proofs_in_flight":
            "too many proofs from this account at once; try again in \(retryAfterSeconds) s"
        case "restore":
            "too many restores from this account; try again in \(retryAfterSeconds) s"
        case "refused_notifications":
            "too many refused notifications from this address; try again in \(retryAfterSeconds) s"
        default:
            "too many purchase requests from this account; try again in \(retryAfterSeconds) s"
        }
    }
}
