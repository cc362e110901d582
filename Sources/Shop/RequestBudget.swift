/// The time a request's work has, so that a call it makes to another service (Apple's API) fits in
/// it with room left for what comes after the call (the ledger write).
///
/// The HTTP server's responder sets ``workDeadline`` for the work of every request: the moment the work is
/// cancelled. Outside a request (tests calling a route's logic, tools) it is nil and a call gets its
/// whole budget.
package enum RequestBudget {
    /// When this request's work is cancelled; nil outside a request.
    @TaskLocal package static var workDeadline: ContinuousClock.Instant?

    /// The least time worth giving a call; with less, the call is not made.
    package static let shortestCall: Duration = .milliseconds(100)

    /// The deadline for a call that may take at most `budget` and must leave `reserve` of the
    /// request's time for what follows it; nil when less than ``shortestCall`` would be left. `now` is
    /// the clock's reading (tests pass theirs).
    package static func deadline(
        budget: Duration, reserve: Duration, now: ContinuousClock.Instant = .now
    ) -> ContinuousClock.Instant? {
        var deadline = now + budget
        if let workDeadline { deadline = min(deadline, workDeadline - reserve) }
        return deadline - now >= shortestCall ? deadline : nil
    }
}
