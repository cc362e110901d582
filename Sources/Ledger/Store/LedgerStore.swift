import Foundation
import Logging
import Postgres

/// The shop's ledger in PostgreSQL: users, purchases, the double-entry journal, grants and refunds.
///
/// Every write is a short READ COMMITTED transaction that relies on unique constraints and
/// `INSERT ... ON CONFLICT`, never on shared balance rows or SERIALIZABLE. The schema is
/// `sql/migrations/0002_ledger.sql`; `Reconciler` checks its invariants.
public struct LedgerStore: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// Test-only fault injection: called between the statements of multi-statement transactions.
    let betweenStatements: (@Sendable (_ step: String, _ connection: PostgresConnection) async throws -> Void)?
    /// New purchases go through it: alone when the database is idle, together when they arrive
    /// together (shared by copies of this store).
    let batcher: PurchaseBatcher

    public init(
        client: PostgresClient, logger: Logger = Logger(label: "shopledger.ledger"),
        groupCommit: GroupCommit = GroupCommit()
    ) {
        self.init(client: client, logger: logger, groupCommit: groupCommit, betweenStatements: nil)
    }

    init(
        client: PostgresClient, logger: Logger = Logger(label: "shopledger.ledger"),
        groupCommit: GroupCommit = GroupCommit(),
        betweenStatements: (@Sendable (_ step: String, _ connection: PostgresConnection) async throws -> Void)?
    ) {
        self.client = client
        self.logger = logger
        self.betweenStatements = betweenStatements
        self.batcher = PurchaseBatcher(configuration: groupCommit, client: client)
    }

    // MARK: Users

    /// Registers a user with the free items owned and equipped. Idempotent: registering again
    /// changes nothing and keeps the first profile.
    public func register(uid: String, profile: UserProfile) async throws -> RegistrationOutcome {
        try Validation.uid(uid)
        let row = try await client.query(
            """
            WITH account AS (
                INSERT INTO users (uid, profile) VALUES (\(uid)::text, \(profile.json)::jsonb)
                ON CONFLICT (uid) DO NOTHING
                RETURNING uid
            ),
            free AS (
                INSERT INTO grants (uid, item_kind, item_index, free)
                SELECT a.uid, c.kind, c.item_index, true FROM account a, catalog_items c WHERE c.item_index = 0
                RETURNING uid, item_kind, item_index
            ),
            history AS (
                INSERT INTO grant_event_rows (uid, item_kind, item_index, source, delta, cause)
                SELECT uid, item_kind, item_index, 'free', 1, 'register' FROM free
            )
            SELECT EXISTS (SELECT 1 FROM account)
            """
        ).single()
        return try row.decode(Bool.self, at: 0) ? .registered : .alreadyRegistered
    }

    /// The user, or nil when the uid is not registered.
    public func user(_ uid: String) async throws -> User? {
        try Validation.uid(uid)
        let rows = try await client.query(
            """
            SELECT uid, profile, equipped_face, equipped_background, registered_at FROM users WHERE uid = \(uid)::text
            """)
        guard let row = rows.first else { return nil }
        let (uid, profile, face, background, registeredAt) = try row.decode((String, String, Int, Int, Date).self)
        return User(
            uid: uid, profile: UserProfile(storedJSON: profile),
            equipped: EquippedItems(face: face, background: background), registeredAt: registeredAt)
    }

    // MARK: Reads

    /// The user, what they own and their transaction ids, in one round trip; nil when the uid is not
    /// registered.
    public func accountSummary(of uid: String) async throws -> AccountSummary? {
        try Validation.uid(uid)
        let rows = try await client.query(
            """
            SELECT u.profile, u.equipped_face, u.equipped_background, u.registered_at,
                   ARRAY(SELECT g.item_index FROM grants g
                         WHERE g.uid = u.uid AND g.item_kind = 'face' AND g.owned ORDER BY g.item_index),
                   ARRAY(SELECT g.item_index FROM grants g
                         WHERE g.uid = u.uid AND g.item_kind = 'background' AND g.owned ORDER BY g.item_index),
                   -- ::text: an array of a domain (migration 0007) has the domain's array type.
                   ARRAY(SELECT p.transaction_id::text FROM purchases p WHERE p.uid = u.uid
                         ORDER BY p.purchased_at, p.transaction_id)
            FROM users u WHERE u.uid = \(uid)::text
            """)
        guard let row = rows.first else { return nil }
        let (profile, face, background, registeredAt, faces, backgrounds, transactionIds) =
            try row.decode((String, Int, Int, Date, [Int], [Int], [String]).self)
        let equipped = EquippedItems(face: face, background: background)
        return AccountSummary(
            user: User(
                uid: uid, profile: UserProfile(storedJSON: profile), equipped: equipped, registeredAt: registeredAt),
            inventory: Inventory(uid: uid, equipped: equipped, faces: faces, backgrounds: backgrounds),
            transactionIds: transactionIds)
    }

    /// What the user owns (free items included) and has equipped.
    public func inventory(of uid: String) async throws -> Inventory {
        try Validation.uid(uid)
        let rows = try await client.query(
            """
            SELECT u.equipped_face, u.equipped_background,
                   coalesce(array_agg(g.item_index ORDER BY g.item_index) FILTER (WHERE g.item_kind = 'face'), '{}'),
                   coalesce(array_agg(g.item_index ORDER BY g.item_index) FILTER (WHERE g.item_kind = 'background'), '{}')
            FROM users u LEFT JOIN grants g ON g.uid = u.uid AND g.owned
            WHERE u.uid = \(uid)::text
            GROUP BY u.uid
            """)
        guard let row = rows.first else { throw LedgerError.userNotRegistered(uid) }
        let (face, background, faces, backgrounds) = try row.decode((Int, Int, [Int], [Int]).self)
        return Inventory(
            uid: uid, equipped: EquippedItems(face: face, background: background), faces: faces,
            backgrounds: backgrounds)
    }

    /// The transaction ids of the user's recorded purchases (every store and environment), oldest
    /// purchase first.
    public func transactionIds(of uid: String) async throws -> [String] {
        try Validation.uid(uid)
        let row = try await client.query(
            """
            SELECT EXISTS (SELECT 1 FROM users WHERE uid = \(uid)::text),
                   ARRAY(SELECT transaction_id::text FROM purchases WHERE uid = \(uid)::text
                         ORDER BY purchased_at, transaction_id)
            """
        ).single()
        let (registered, ids) = try row.decode((Bool, [String]).self)
        guard registered else { throw LedgerError.userNotRegistered(uid) }
        return ids
    }

    /// The user's purchases with their current state, oldest first.
    public func purchaseHistory(of uid: String) async throws -> [Purchase] {
        try Validation.uid(uid)
        let rows = try await client.query(
            """
            SELECT u.uid IS NOT NULL AS registered, \(unsafeSQL: Purchase.selectColumns)
            FROM (SELECT \(uid)::text AS uid) input
            LEFT JOIN users u ON u.uid = input.uid
            LEFT JOIN purchases p ON p.uid = u.uid
            ORDER BY p.purchased_at, p.transaction_id
            """)
        guard let first = rows.first, try first.decode(Bool.self, column: "registered") else {
            throw LedgerError.userNotRegistered(uid)
        }
        return try rows.compactMap { row in
            try row.decode(String?.self, column: "transaction_id") == nil ? nil : try Purchase(row: row)
        }
    }
}
