import Foundation
import Postgres

/// How many sign-in attempts are allowed: per operator name and per client address, in a sliding window.
public struct SignInLimits: Sendable, Hashable {
    public var perOperator: Int
    public var perAddress: Int
    public var window: Duration

    public init(perOperator: Int = 5, perAddress: Int = 20, window: Duration = .seconds(15 * 60)) {
        self.perOperator = perOperator
        self.perAddress = perAddress
        self.window = window
    }
}

/// What a sign-in came to.
enum SignInOutcome: Sendable {
    case signedIn(token: String, session: ConsoleSession)
    /// Wrong name or password, or a disabled operator: the page does not say which.
    case refused
    /// Too many attempts for this name or address in the window; nothing was checked.
    case limited
}

/// Signing in: the attempt is reserved before the password is checked, so parallel guesses cannot pass
/// the limit (a limit checked on arrival and spent on return lets them all through).
struct SignIn: Sendable {
    let operators: OperatorStore
    let sessions: ConsoleSessions
    let audit: ConsoleAudit
    let limits: SignInLimits

    /// A hash to check when the name is unknown, so an unknown name takes as long as a wrong password
    /// (scrypt is computed the same way, at the cost new passwords get; its all-zero result matches no
    /// password).
    var decoy: PasswordHash {
        PasswordHash(cost: operators.cost, salt: Array("shopledger-decoy".utf8), hash: [UInt8](repeating: 0, count: 32))
    }

    func attempt(name rawName: String, password: String, address: String?) async throws -> SignInOutcome {
        let name = String(rawName.trimmingCharacters(in: .whitespaces).lowercased().prefix(200))
        let counted = (try? Operator.checkName(name)) != nil ? name : "(invalid name)"
        guard let attemptId = try await reserve(name: counted, address: address) else {
            try await audit.record("login_limited", by: counted, address: address)
            return .limited
        }
        let found = try await operators.credentials(name: counted)
        let hash = found?.1 ?? decoy
        let matches = try await OperatorStore.check(password, against: hash)
        guard matches, let (account, _) = found, account.isActive else {
            try await audit.record("login_failed", by: counted, address: address, settling: attemptId)
            return .refused
        }
        try await audit.record("login_ok", by: account.name, address: address, settling: attemptId)
        let (token, session) = try await sessions.open(for: account, address: address)
        return .signedIn(token: token, session: session)
    }

    /// Counts the unsettled attempts in the window for the name and for the address, and writes this
    /// one when both are under their limit: under advisory locks held for that statement only (the
    /// address's, then the name's), so two attempts never both see room for one.
    private func reserve(name: String, address: String?) async throws -> Int64? {
        let now = sessions.clock()
        let since = now.addingTimeInterval(-limits.window.seconds)
        let addressKey = address ?? "(none)"
        return try await operators.client.withTransaction { connection in
            try await connection.execute(
                """
                SELECT pg_advisory_xact_lock(hashtextextended('console-login-address:' || \(addressKey)::text, 0)),
                       pg_advisory_xact_lock(hashtextextended('console-login-operator:' || \(name)::text, 0))
                """)
            let (byName, byAddress) = try await connection.query(
                """
                SELECT
                  (SELECT count(*) FROM console_events a
                   WHERE a.action = 'login_attempt' AND a.operator = \(name)::text AND a.at > \(since)
                     AND NOT EXISTS (SELECT 1 FROM console_events s WHERE s.attempt_id = a.event_id AND s.action = 'login_ok')),
                  (SELECT count(*) FROM console_events a
                   WHERE a.action = 'login_attempt' AND a.address IS NOT DISTINCT FROM \(address)::text AND a.at > \(since)
                     AND NOT EXISTS (SELECT 1 FROM console_events s WHERE s.attempt_id = a.event_id AND s.action = 'login_ok'))
                """
            ).single().decode((Int64, Int64).self)
            guard byName < limits.perOperator, byAddress < limits.perAddress else { return nil }
            return try await connection.query(
                """
                INSERT INTO console_events (at, action, operator, address) VALUES (\(now), 'login_attempt', \(name)::text, \(address)::text)
                RETURNING event_id
                """
            ).single().decode(Int64.self, at: 0)
        }
    }
}
