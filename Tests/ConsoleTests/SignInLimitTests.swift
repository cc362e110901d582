import Console
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Postgres
import TestSupport
import Testing

/// Sign-in limits are reservations taken before the password is checked: a burst of parallel guesses
/// gets exactly the limit's number of checks, however they interleave.
@Suite struct SignInLimitTests {
    @Test func fiftyParallelGuessesAtOneNameGetFiveChecks() async throws {
        try await withConsole { client, db, clock in
            try await addOperator(db, "mina", role: .support)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for guess in 0..<50 {
                    group.addTask {
                        var browser = Browser(client)
                        return try await browser.signIn("mina", "wrong guess number \(guess)").status
                    }
                }
                return try await group.reduce(into: [HTTPResponse.Status: Int]()) { $0[$1, default: 0] += 1 }
            }
            #expect(statuses == [.unauthorized: 5, .tooManyRequests: 45])
            // The right password is limited too while the window lasts: the limit is not a hint.
            var browser = Browser(client)
            #expect(try await browser.signIn("mina", "correct horse battery").status == .tooManyRequests)
            let (attempts, failed, limited) = try await db.client.query(
                """
                SELECT count(*) FILTER (WHERE action = 'login_attempt'), count(*) FILTER (WHERE action = 'login_failed'),
                       count(*) FILTER (WHERE action = 'login_limited')
                FROM console_events
                """
            ).single().decode((Int64, Int64, Int64).self)
            #expect(attempts == 5 && failed == 5 && limited == 46)

            clock.advance(15 * 60 + 1)
            let signedIn = try await browser.signIn("mina", "correct horse battery")
            #expect(signedIn.status == .seeOther)
        }
    }

    @Test func oneAddressGuessingManyNamesIsLimitedToo() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "mina", role: .support)
            var outcomes: [HTTPResponse.Status] = []
            for name in 0..<22 {
                var browser = Browser(client)
                outcomes.append(try await browser.signIn("guess\(name)", "some password here").status)
            }
            #expect(outcomes.prefix(20).allSatisfy { $0 == .unauthorized })
            #expect(outcomes.suffix(2).allSatisfy { $0 == .tooManyRequests })
            // From that address nobody signs in, not even with the right password.
            var browser = Browser(client)
            #expect(try await browser.signIn("mina", "correct horse battery").status == .tooManyRequests)
        }
    }

    @Test func aSuccessfulSignInReturnsItsReservation() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "mina", role: .support)
            for _ in 0..<10 {
                var browser = Browser(client)
                #expect(try await browser.signIn("mina", "correct horse battery").status == .seeOther)
            }
            var browser = Browser(client)
            for _ in 0..<4 { _ = try await browser.signIn("mina", "wrong password guess") }
            #expect(try await browser.signIn("mina", "correct horse battery").status == .seeOther)
        }
    }
}
