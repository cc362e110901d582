import Shop
import Synchronization

/// Which App Store notifications are read and verified now. Anyone may post one (the signature is the
/// proof), and a valid signature over a foreign chain costs a verification, so:
///
/// - each client address (the peer, or the client a trusted proxy names; an IPv6 client's /64) has an
///   allowance of refused
///   notifications, taken as a reservation when a notification arrives, before its body is read, and
///   given back when it verifies (or its verification is cut short): Apple's own are never counted
///   against it, and an address past it is answered 429 at once;
/// - at most ``maximumInFlight`` notifications are being read or verified at once, whoever sends them
///   (storing and applying one is the database's, bounded by its pool);
///   past that, 503 at once rather than a queue that grows with the flood.
///
/// A notification turned away is answered after ``turnAwayDelay`` (a second), not at once: a flood's
/// connections each send the next as soon as the last is answered, and at once is as fast as the server
/// can answer, every request of which waits in the same queues as a buyer's (1,500 such connections took
/// a buyer's p99 from 7 ms to 496 ms, all of them answered 429). Waiting costs a suspended task.
///
/// Apple retries a notification that was not answered 200 (on its schedule, for days), and the sync
/// reads the notification history, so a real one refused here is delayed, not lost.
final class NotificationAdmission: Sendable {
    /// An admitted notification: hand it back with ``release(_:verified:)``.
    struct Ticket: Sendable {
        fileprivate let source: UserRateLimiter.Ticket
    }

    let refusals: UserRateLimiter
    let maximumInFlight: Int
    let turnAwayDelay: Duration
    private let inFlight = Mutex(0)

    init(refusals: RateLimit, maximumInFlight: Int, turnAwayDelay: Duration = .seconds(1)) {
        self.refusals = UserRateLimiter(refusals)
        self.maximumInFlight = max(1, maximumInFlight)
        self.turnAwayDelay = turnAwayDelay
    }

    /// Admits a notification from `address`, or turns it away after ``turnAwayDelay``.
    /// - Throws: `RateLimitedError` (`refused_notifications`) when the address is past its allowance,
    ///   ``VerificationBusy`` when as many notifications as allowed are in flight.
    func admit(from address: IPAddress?) async throws -> Ticket {
        do {
            return try admitNow(from: address)
        } catch {
            try? await Task.sleep(for: turnAwayDelay)
            throw error
        }
    }

    /// ``admit(from:)`` without the delay.
    func admitNow(from address: IPAddress?) throws -> Ticket {
        let source: UserRateLimiter.Ticket
        switch refusals.admit(Self.source(address)) {
        case .success(let ticket): source = ticket
        case .failure(let refusal):
            throw RateLimitedError(limit: "refused_notifications", retryAfter: refusal.retryAfter)
        }
        let admitted = inFlight.withLock { count in
            guard count < maximumInFlight else { return false }
            count += 1
            return true
        }
        guard admitted else {
            refusals.release(source, refund: true)
            throw VerificationBusy()
        }
        return Ticket(source: source)
    }

    /// Ends an admitted notification; `verified` (or cut short: no verdict) gives its address's token back.
    func release(_ ticket: Ticket, verified: Bool) {
        inFlight.withLock { $0 -= 1 }
        refusals.release(ticket.source, refund: verified)
    }

    /// Whose allowance a notification spends: its IPv4 address, or its IPv6 address's /64 (one network's
    /// share: a single host is given a /64 and can send from any address in it).
    static func source(_ address: IPAddress?) -> String {
        guard let address else { return "unknown" }
        guard address.bytes.count == 16 else { return address.description }
        let hex = address.bytes.prefix(8).map { String($0, radix: 16) }.joined(separator: ":")
        return "v6/64:" + hex
    }

    /// Notifications being read or verified now (for tests and `/metrics`).
    var inFlightCount: Int { inFlight.withLock { $0 } }
}

/// As many notifications as the server verifies at once are in flight: 503 with `Retry-After: 1`.
struct VerificationBusy: Error, Sendable, CustomStringConvertible {
    var description: String { "too many notifications are being verified; try again" }
}
