import Testing

@testable import Shop

@Suite("Request budgets: a call's deadline within the request's time")
struct RequestBudgetTests {
    @Test("outside a request a call gets its whole budget")
    func wholeBudget() {
        let now = ContinuousClock.now
        #expect(RequestBudget.deadline(budget: .seconds(5), reserve: .seconds(1), now: now) == now + .seconds(5))
    }

    @Test("inside a request a call ends its reserve before the work's deadline, or is not made")
    func withinRequest() {
        let now = ContinuousClock.now
        RequestBudget.$workDeadline.withValue(now + .seconds(3)) {
            // The work's deadline less the reserve comes first.
            #expect(RequestBudget.deadline(budget: .seconds(5), reserve: .seconds(1), now: now) == now + .seconds(2))
            // The call's own budget comes first.
            #expect(
                RequestBudget.deadline(budget: .milliseconds(500), reserve: .seconds(1), now: now)
                    == now + .milliseconds(500))
            // Exactly the shortest call left: made; less: not made.
            #expect(
                RequestBudget.deadline(budget: .seconds(5), reserve: .milliseconds(2900), now: now)
                    == now + .milliseconds(100))
            #expect(RequestBudget.deadline(budget: .seconds(5), reserve: .milliseconds(2901), now: now) == nil)
            // Later in the same request, less is left.
            #expect(RequestBudget.deadline(budget: .seconds(5), reserve: .seconds(1), now: now + .seconds(2)) == nil)
        }
    }
}
