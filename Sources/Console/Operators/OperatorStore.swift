import Foundation
import NIOPosix
import Postgres

/// The console's operators (`console_operators`, migration 0020): `shopledger operators` and the
/// console's sign-in both use it.
public struct OperatorStore: Sendable {
    let client: PostgresClient
    let cost: PasswordHash.Cost

    public init(client: PostgresClient, cost: PasswordHash.Cost = .standard) {
        self.client = client
        self.cost = cost
    }

    /// Adds an operator.
    /// - Throws: ``OperatorError`` (`.invalidName`, `.weakPassword`, `.nameTaken`); nothing is written then.
    public func add(name: String, role: Operator.Role, password: String) async throws -> Operator {
        try Operator.checkName(name)
        let hash = try await Self.hash(password, cost: cost)
        let rows = try await client.query(
            """
            INSERT INTO console_operators (name, role, password_hash)
            VALUES (\(name)::text, \(role.rawValue)::text, \(hash.description)::text)
            ON CONFLICT (name) DO NOTHING
            RETURNING \(unsafeSQL: Self.columns)
            """)
        guard let row = rows.first else { throw OperatorError(.nameTaken, "an operator named \(name) exists already") }
        return try Self.decode(row)
    }

    /// Every operator, active or not, by name.
    public func list() async throws -> [Operator] {
        try await client.query("SELECT \(unsafeSQL: Self.columns) FROM console_operators ORDER BY name").map(
            Self.decode)
    }

    public func find(name: String) async throws -> Operator? {
        try await client.query(
            "SELECT \(unsafeSQL: Self.columns) FROM console_operators WHERE name = \(name)::text"
        ).first.map(Self.decode)
    }

    /// Disables an operator and ends their sessions; they can no longer sign in.
    /// - Throws: `.noSuchOperator`.
    public func disable(name: String) async throws -> Operator {
        let rows = try await client.query(
            """
            WITH disabled AS (
                UPDATE console_operators SET disabled_at = coalesce(disabled_at, now())
                WHERE name = \(name)::text RETURNING \(unsafeSQL: Self.columns)
            ),
            ended AS (
                UPDATE console_sessions s SET ended_at = now() FROM disabled d
                WHERE s.operator_id = d.operator_id AND s.ended_at IS NULL
            )
            SELECT * FROM disabled
            """)
        guard let row = rows.first else { throw OperatorError(.noSuchOperator, "no operator is named \(name)") }
        return try Self.decode(row)
    }

    /// Sets a new password (and enables a disabled operator again); every session of theirs ends.
    /// - Throws: `.noSuchOperator`, `.weakPassword`.
    public func resetPassword(name: String, password: String) async throws -> Operator {
        let hash = try await Self.hash(password, cost: cost)
        let rows = try await client.query(
            """
            WITH changed AS (
                UPDATE console_operators
                SET password_hash = \(hash.description)::text, password_changed_at = now(), disabled_at = NULL
                WHERE name = \(name)::text RETURNING \(unsafeSQL: Self.columns)
            ),
            ended AS (
                UPDATE console_sessions s SET ended_at = now() FROM changed c
                WHERE s.operator_id = c.operator_id AND s.ended_at IS NULL
            )
            SELECT * FROM changed
            """)
        guard let row = rows.first else { throw OperatorError(.noSuchOperator, "no operator is named \(name)") }
        return try Self.decode(row)
    }

    /// The operator and their stored hash, for sign-in.
    func credentials(name: String) async throws -> (Operator, PasswordHash?)? {
        guard
            let row = try await client.query(
                """
                SELECT \(unsafeSQL: Self.columns), password_hash FROM console_operators WHERE name = \(name)::text
                """
            ).first
        else { return nil }
        let (_, _, _, _, _, _, stored) = try row.decode((Int64, String, String, Date, Date, Date?, String).self)
        return (try Self.decode(row), PasswordHash(stored: stored))
    }

    /// scrypt takes tens of milliseconds of one core: it runs on NIO's blocking pool, not on a thread of
    /// Swift's cooperative pool (two here), which the server's requests need.
    static func hash(_ password: String, cost: PasswordHash.Cost) async throws -> PasswordHash {
        try PasswordHash.checkStrength(password)
        return try await NIOThreadPool.singleton.runIfActive { try PasswordHash.make(password: password, cost: cost) }
    }

    static func check(_ password: String, against hash: PasswordHash) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { hash.matches(password) }
    }

    static let columns = "operator_id, name, role, created_at, password_changed_at, disabled_at"

    static func decode(_ row: PostgresRow) throws -> Operator {
        let (id, name, roleText, createdAt, changedAt, disabledAt) = try row.decode(
            (Int64, String, String, Date, Date, Date?).self)
        guard let role = Operator.Role(rawValue: roleText) else {
            throw PostgresError(code: .decoding, message: "operator \(name) has role \(roleText)")
        }
        return Operator(
            operatorId: id, name: name, role: role, createdAt: createdAt, passwordChangedAt: changedAt,
            disabledAt: disabledAt)
    }
}
