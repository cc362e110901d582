/// The per-user limits of a server, from its ``ServerConfiguration``.
struct UserLimits: Sendable {
    /// Restores: each asks Apple's App Store Server API, whose quota the whole app shares.
    let restores: UserRateLimiter
    /// Refused proofs: each costs a verification (CPU); a user over it is not verified until a token
    /// comes back. Accepted proofs and duplicates spend nothing.
    let refusedProofs: UserRateLimiter
    /// Every purchase request, accepted or not; off by default (a load test posts thousands per user).
    let purchases: UserRateLimiter

    init(_ configuration: ServerConfiguration) {
        restores = UserRateLimiter(configuration.restoreLimit)
        refusedProofs = UserRateLimiter(configuration.refusedProofLimit)
        purchases = UserRateLimiter(configuration.purchaseLimit)
    }

    /// No limits (tests of other things).
    init() {
        restores = UserRateLimiter(.off)
        refusedProofs = UserRateLimiter(.off)
        purchases = UserRateLimiter(.off)
    }
}

/// A request turned away by a per-user limit: 429 with `Retry-After` on the JSON surface, 500 (the
/// SeSAC clients' "server error, try later") with `Retry-After` on the SeSAC surface.
struct RateLimitedError: Error, Sendable, CustomStringConvertible {
    /// `restore`, `refused_proofs` or `purchases`.
    let limit: String
    let retryAfter: Duration

    /// Whole seconds, at least 1, as `Retry-After` carries them.
    var retryAfterSeconds: Int {
        let (seconds, attoseconds) = retryAfter.components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }

    var description: String {
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
