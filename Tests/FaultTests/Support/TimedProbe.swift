import NIOCore
import NIOHTTP1

/// One GET against a server under a fault: when it was sent, how long the answer took, and what it was.
struct TimedProbe: Sendable {
    let at: ContinuousClock.Instant
    let latency: Duration
    let outcome: FaultHTTP.Outcome

    /// Sends `GET url` and times it.
    static func get(
        _ url: String, headers: [(String, String)] = [], timeout: TimeAmount, with http: FaultHTTP
    ) async -> TimedProbe {
        let started = ContinuousClock.now
        let (outcome, _) = await http.outcome(.GET, url, headers: headers, timeout: timeout)
        return TimedProbe(at: started, latency: .now - started, outcome: outcome)
    }
}
