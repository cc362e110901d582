import Crypto
import Foundation
import Postgres

/// How long a console session lasts.
public struct ConsoleSessionSettings: Sendable, Hashable {
    /// A session not used for this long ends (the next page asks to sign in).
    public var idle: Duration
    /// A session ends this long after sign-in, however busy.
    public var absolute: Duration
    /// `last_seen_at` is written at most this often per session (a page view is otherwise a read).
    public var touchInterval: Duration

    public init(idle: Duration = .seconds(30 * 60), absolute: Duration = .seconds(12 * 3600)) {
        self.idle = idle
        self.absolute = absolute
        self.touchInterval = .seconds(60)
    }
}

/// A signed-in browser: the operator, as read on this request, and the token its forms carry.
public struct ConsoleSession: Sendable, Hashable {
    public var operatorAccount: Operator
    public var csrfToken: String
    public var createdAt: Date
    public var lastSeenAt: Date
    let tokenSHA256: Data
}

/// The console's sessions (`console_sessions`, migration 0020), shared by every server on the database.
/// Times come from `clock`, so tests drive expiry without waiting.
public struct ConsoleSessions: Sendable {
    let client: PostgresClient
    let settings: ConsoleSessionSettings
    let clock: @Sendable () -> Date

    public init(
        client: PostgresClient, settings: ConsoleSessionSettings = .init(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.client = client
        self.settings = settings
        self.clock = clock
    }

    /// Opens a session for `account`; returns the cookie's token (never stored) and the session.
    func open(for account: Operator, address: String?) async throws -> (token: String, session: ConsoleSession) {
        let token = Self.randomToken()
        let csrf = Self.randomToken()
        let hash = Self.sha256(token)
        let now = clock()
        try await client.execute(
            """
            INSERT INTO console_sessions (token_sha256, operator_id, csrf_token, created_at, last_seen_at, address)
            VALUES (\(hash), \(account.operatorId), \(csrf)::text, \(now), \(now), \(address)::text)
            """)
        return (
            token,
            ConsoleSession(
                operatorAccount: account, csrfToken: csrf, createdAt: now, lastSeenAt: now, tokenSHA256: hash)
        )
    }

    /// The live session the cookie's token names: not ended, its operator active, neither idle nor too
    /// old. Nil otherwise (an idle or old session is ended on the way).
    func find(token: String) async throws -> ConsoleSession? {
        guard token.utf8.count == 43, token.utf8.allSatisfy({ Self.tokenAlphabet.contains($0) }) else { return nil }
        let hash = Self.sha256(token)
        guard
            let row = try await client.query(
                """
                SELECT o.operator_id, o.name, o.role, o.created_at, o.password_changed_at, o.disabled_at,
                       s.csrf_token, s.created_at, s.last_seen_at
                FROM console_sessions s JOIN console_operators o ON o.operator_id = s.operator_id
                WHERE s.token_sha256 = \(hash) AND s.ended_at IS NULL AND o.disabled_at IS NULL
                """
            ).first
        else { return nil }
        let account = try OperatorStore.decode(row)
        let (csrf, createdAt, lastSeenAt) = (
            try row.decode(String.self, at: 6), try row.decode(Date.self, at: 7), try row.decode(Date.self, at: 8)
        )
        let now = clock()
        if now.timeIntervalSince(lastSeenAt) >= settings.idle.seconds
            || now.timeIntervalSince(createdAt) >= settings.absolute.seconds
        {
            try await client.execute(
                "UPDATE console_sessions SET ended_at = \(now) WHERE token_sha256 = \(hash) AND ended_at IS NULL")
            return nil
        }
        var seen = lastSeenAt
        if now.timeIntervalSince(lastSeenAt) >= settings.touchInterval.seconds {
            try await client.execute(
                "UPDATE console_sessions SET last_seen_at = \(now) WHERE token_sha256 = \(hash) AND ended_at IS NULL")
            seen = now
        }
        return ConsoleSession(
            operatorAccount: account, csrfToken: csrf, createdAt: createdAt, lastSeenAt: seen, tokenSHA256: hash)
    }

    /// Ends the session (sign-out).
    func end(_ session: ConsoleSession) async throws {
        try await client.execute(
            """
            UPDATE console_sessions SET ended_at = \(clock())
            WHERE token_sha256 = \(session.tokenSHA256) AND ended_at IS NULL
            """)
    }

    /// 32 random bytes, base64url without padding (43 characters).
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static let tokenAlphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func sha256(_ token: String) -> Data { Data(SHA256.hash(data: Data(token.utf8))) }

    /// Constant-time comparison of two tokens.
    static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for (p, q) in zip(x, y) { difference |= p ^ q }
        return difference == 0
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
