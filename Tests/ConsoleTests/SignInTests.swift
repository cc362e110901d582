import Console
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Postgres
import TestSupport
import Testing

@Suite struct SignInTests {
    @Test func signingInOpensTheCustomersPageAndSigningOutEndsTheSession() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            let before = try await browser.get("/customers")
            #expect(before.status == .seeOther)
            #expect(before.location?.hasPrefix("/login") == true)

            let signedIn = try await browser.signIn("mina", "correct horse battery")
            #expect(signedIn.status == .seeOther)
            let session = try #require(signedIn.cookie("shopledger_console"))
            let setCookie = try #require(
                signedIn.headers[values: .setCookie].first { $0.hasPrefix("shopledger_console=") })
            #expect(
                setCookie.contains("HttpOnly") && setCookie.contains("Secure") && setCookie.contains("SameSite=Strict"))
            let stored = try await db.client.query("SELECT count(*) FROM console_sessions WHERE ended_at IS NULL")
                .single().decode(Int64.self, at: 0)
            #expect(stored == 1)
            // Only the token's hash is stored.
            let plain = try await db.client.query(
                "SELECT count(*) FROM console_sessions WHERE encode(token_sha256, 'escape') LIKE '%' || \(session)::text || '%'"
            ).single().decode(Int64.self, at: 0)
            #expect(plain == 0)

            let customers = try await browser.get("/customers")
            #expect(customers.status == .ok)
            #expect(customers.body.contains("<h1>Customers</h1>"))
            let csp = try #require(customers.headers[.contentSecurityPolicy])
            #expect(csp.contains("default-src 'none'") && !csp.contains("unsafe-inline") && !csp.contains("script-src"))

            let out = try await browser.post("/logout", [("csrf", customers.csrf ?? "")])
            #expect(out.status == .seeOther)
            let after = try await browser.get("/customers")
            #expect(after.status == .seeOther)
            // The old cookie, replayed, opens nothing either.
            browser.cookies["shopledger_console"] = session
            #expect(try await browser.get("/customers").status == .seeOther)
            let actions = try await db.client.query(
                "SELECT action FROM console_events WHERE operator = 'mina' ORDER BY event_id"
            ).map { try $0.decode(String.self, at: 0) }
            #expect(actions == ["login_attempt", "login_ok", "logout"])
        }
    }

    @Test func aWrongPasswordAndAnUnknownNameGetTheSameRefusal() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            let wrong = try await browser.signIn("mina", "not the password!")
            let unknown = try await browser.signIn("nobody", "not the password!")
            #expect(wrong.status == .unauthorized && unknown.status == .unauthorized)
            #expect(wrong.body.contains("Wrong name or password.") && unknown.body.contains("Wrong name or password."))
            #expect(browser.cookies["shopledger_console"] == nil)
        }
    }

    @Test func aSignInFormWithoutItsTokenIsRefused() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            let page = try await browser.post(
                "/login", [("form_token", "forged"), ("name", "mina"), ("password", "correct horse battery")])
            #expect(page.status == .forbidden)
            #expect(browser.cookies["shopledger_console"] == nil)
            let attempts = try await db.client.query("SELECT count(*) FROM console_events").single()
                .decode(Int64.self, at: 0)
            #expect(attempts == 0)
        }
    }

    @Test func aDisabledOperatorsSessionEndsAtOnce() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            try await browser.signIn("mina", "correct horse battery")
            #expect(try await browser.get("/customers").status == .ok)
            _ = try await OperatorStore(client: db.client, cost: .testing).disable(name: "mina")
            #expect(try await browser.get("/customers").status == .seeOther)
            #expect(try await browser.signIn("mina", "correct horse battery").status == .unauthorized)
        }
    }

    @Test func anIdleSessionAndAnOldOneAreSentToSignIn() async throws {
        try await withConsole { client, db, clock in
            try await addOperator(db, "mina", role: .support)
            var browser = Browser(client)
            try await browser.signIn("mina", "correct horse battery")
            clock.advance(29 * 60)
            #expect(try await browser.get("/customers").status == .ok)
            clock.advance(29 * 60)
            #expect(try await browser.get("/customers").status == .ok, "each page view keeps it alive")
            clock.advance(30 * 60)
            let idle = try await browser.get("/customers?q=x")
            #expect(idle.status == .seeOther)
            #expect(idle.location == "/login?next=%2Fcustomers%3Fq%3Dx")

            try await browser.signIn("mina", "correct horse battery")
            for _ in 0..<24 {
                clock.advance(29 * 60)
                _ = try await browser.get("/customers")
            }
            // 11 h 36 min of use: still in. Past 12 h, however busy: out.
            #expect(try await browser.get("/customers").status == .ok)
            clock.advance(25 * 60)
            #expect(try await browser.get("/customers").status == .seeOther)
        }
    }

    @Test func theLanguageFollowsTheBrowserAndTheSwitch() async throws {
        try await withConsole { client, _, _ in
            var browser = Browser(client)
            browser.language = "ko-KR,ko;q=0.9,en;q=0.8"
            #expect(try await browser.get("/login").body.contains("<html lang=\"ko\">"))
            browser.language = "en-US,en;q=0.9"
            #expect(try await browser.get("/login").body.contains("<html lang=\"en\">"))
            browser.language = "fr"
            #expect(try await browser.get("/login").body.contains("<html lang=\"ko\">"))
            let switched = try await browser.get("/language?to=en&next=%2Flogin")
            #expect(switched.location == "/login")
            #expect(try await browser.get("/login").body.contains("<html lang=\"en\">"))
            // Never a redirect off the console.
            #expect(try await browser.get("/language?to=ko&next=%2F%2Fevil.example").location == "/")
        }
    }
}

@Suite struct SharedSessionTests {
    /// Two servers on one database: a session opened on one is known to the other, and a sign-out on
    /// the other ends it for both.
    @Test func aSessionOpenedOnOneServerWorksOnAnother() async throws {
        try await withTestDatabase { db in
            try await addOperator(db, "mina", role: .support)
            func console() -> some ApplicationProtocol {
                buildConsole(
                    configuration: ConsoleConfiguration(port: 0, passwordCost: .testing),
                    services: ConsoleServices(client: db.client), logger: Logger(label: "console-test"))
            }
            let first = console()
            let second = console()
            try await first.test(.router) { one in
                try await second.test(.router) { two in
                    var onFirst = Browser(one)
                    try await onFirst.signIn("mina", "correct horse battery")
                    var onSecond = Browser(two)
                    onSecond.cookies = onFirst.cookies
                    let page = try await onSecond.get("/customers")
                    #expect(page.status == .ok)
                    #expect(try await onSecond.post("/logout", [("csrf", page.csrf ?? "")]).status == .seeOther)
                    #expect(try await onFirst.get("/customers").status == .seeOther)
                }
            }
        }
    }
}
