import Crypto
import Foundation
import Postgres
import Receipts

/// A Google Play purchase the ledger recorded, by its purchase token (migration 0021).
public struct GooglePlayToken: Sendable, Hashable {
    public var purchaseToken: String
    public var packageName: String
    public var environment: StoreEnvironment
    public var transactionId: String
    public var orderId: String?
    public var productId: String
    /// Consumed after acknowledging (a consumable product); the shop's items are bought once, never consumed.
    public var consumable: Bool
    public var purchaseDate: Date

    public init(
        purchaseToken: String, packageName: String, environment: StoreEnvironment, transactionId: String,
        orderId: String?, productId: String, consumable: Bool, purchaseDate: Date
    ) {
        self.purchaseToken = purchaseToken
        self.packageName = packageName
        self.environment = environment
        self.transactionId = transactionId
        self.orderId = orderId
        self.productId = productId
        self.consumable = consumable
        self.purchaseDate = purchaseDate
    }
}

extension LedgerStore {
    /// Google acknowledges nothing after this: a purchase not acknowledged within three days of its
    /// purchase is refunded by Google.
    public static let googleAcknowledgementWindow: TimeInterval = 3 * 86_400

    /// Keeps the purchase token of a Play purchase recorded with ``recordPurchase(_:for:claimingAccountToken:)``
    /// (store `google_play`), once: a second call for the token changes nothing.
    ///
    /// - Throws: `LedgerError(.invalidInput)` for a token of another shape; `PostgresError` (a foreign key
    ///   violation when the purchase is not recorded).
    public func recordGooglePlayToken(_ token: GooglePlayToken) async throws {
        guard (1...512).contains(token.purchaseToken.utf8.count) else {
            throw LedgerError(.invalidInput, "a purchase token is 1–512 bytes")
        }
        try await client.query(
            """
            INSERT INTO google_play_purchases (purchase_token, package_name, store, environment, transaction_id,
                order_id, product_id, consumable, purchased_at)
            VALUES (\(token.purchaseToken)::text, \(token.packageName)::text, 'google_play',
                \(token.environment.rawValue)::text, \(token.transactionId)::text, \(token.orderId)::text,
                \(token.productId)::text, \(token.consumable)::boolean, \(token.purchaseDate)::timestamptz)
            ON CONFLICT (purchase_token) DO NOTHING
            """)
    }

    /// The recorded Play purchase of `purchaseToken`, or of `orderId` when the token is not known here.
    public func googlePlayToken(purchaseToken: String, orderId: String? = nil) async throws -> GooglePlayToken? {
        let rows = try await client.query(
            """
            SELECT \(unsafeSQL: Self.googleTokenColumns) FROM google_play_purchases
            WHERE purchase_token = \(purchaseToken)::text
               OR (\(orderId)::text IS NOT NULL AND order_id = \(orderId)::text)
            ORDER BY purchase_token = \(purchaseToken)::text DESC
            LIMIT 1
            """)
        return try rows.first.map(Self.googleToken)
    }

    /// Play purchases still owed an acknowledgement whose three days have not run out, oldest first.
    public func googlePlayAcknowledgementsOwed(now: Date = Date(), limit: Int = 100) async throws -> [GooglePlayToken] {
        let since = now.addingTimeInterval(-Self.googleAcknowledgementWindow)
        let rows = try await client.query(
            """
            SELECT \(unsafeSQL: Self.googleTokenColumns) FROM google_play_purchases g
            WHERE g.purchased_at > \(since)::timestamptz
              AND NOT EXISTS (SELECT 1 FROM google_play_acknowledgements a WHERE a.purchase_token = g.purchase_token)
            ORDER BY g.purchased_at
            LIMIT \(limit)
            """)
        return try rows.map(Self.googleToken)
    }

    /// Play purchases bought and recorded without a price that none has been learned for, and that have
    /// an order id to ask Google's Orders API about, at most `limit`: what a sync prices. Never asked
    /// first, then the least asked, oldest recorded first; with `dueAt`, only those whose back-off
    /// (`price_lookups`, as for App Store purchases) has run out by then.
    public func unpricedGooglePlayPurchases(limit: Int, dueAt: Date? = nil) async throws -> [GooglePlayToken] {
        let rows = try await client.query(
            """
            SELECT \(unsafeSQL: Self.googleTokenColumns("g")) FROM google_play_purchases g
            JOIN purchases p
              ON p.store = g.store AND p.environment = g.environment AND p.transaction_id = g.transaction_id
            LEFT JOIN price_lookups k
              ON k.transaction_id = p.transaction_id AND k.store = p.store AND k.environment = p.environment
            WHERE p.price_milli IS NULL AND p.ownership = 'PURCHASED' AND g.order_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM purchase_prices l
                              WHERE l.transaction_id = p.transaction_id AND l.store = p.store
                                AND l.environment = p.environment)
              AND (\(dueAt)::timestamptz IS NULL OR k.next_attempt_at IS NULL OR k.next_attempt_at <= \(dueAt))
            ORDER BY coalesce(k.attempts, 0), p.recorded_at, p.transaction_id
            LIMIT \(max(0, limit))
            """)
        return try rows.map(Self.googleToken)
    }

    /// Google took the acknowledgement (and consumption) of `purchaseToken`: recorded once.
    public func recordGooglePlayAcknowledgement(purchaseToken: String, consumed: Bool) async throws {
        try await client.query(
            """
            INSERT INTO google_play_acknowledgements (purchase_token, consumed)
            VALUES (\(purchaseToken)::text, \(consumed)::boolean)
            ON CONFLICT (purchase_token) DO NOTHING
            """)
    }

    /// Whether Google took the acknowledgement of `purchaseToken`.
    public func isGooglePlayAcknowledged(purchaseToken: String) async throws -> Bool {
        try await client.query(
            "SELECT EXISTS (SELECT 1 FROM google_play_acknowledgements WHERE purchase_token = \(purchaseToken)::text)"
        ).single().decode(Bool.self, at: 0)
    }

    private static let googleTokenColumns = googleTokenColumns(nil)

    private static func googleTokenColumns(_ table: String?) -> String {
        let prefix = table.map { $0 + "." } ?? ""
        return [
            "purchase_token", "package_name", "environment::text", "transaction_id::text", "order_id", "product_id",
            "consumable", "purchased_at",
        ].map { prefix + $0 }.joined(separator: ", ")
    }

    private static func googleToken(_ row: PostgresRow) throws -> GooglePlayToken {
        let (token, package, environment, transactionId, orderId, productId, consumable, purchasedAt) =
            try row.decode((String, String, String, String, String?, String, Bool, Date).self)
        return GooglePlayToken(
            purchaseToken: token, packageName: package, environment: StoreEnvironment(rawValue: environment),
            transactionId: transactionId, orderId: orderId, productId: productId, consumable: consumable,
            purchaseDate: purchasedAt)
    }
}

extension GooglePlayToken {
    /// The ledger's transaction id of a Play purchase: Google's orderId, or `token:` and the SHA-256 of
    /// the purchase token for a purchase without one.
    public static func transactionId(orderId: String?, token: String) -> String {
        if let orderId, (1...128).contains(orderId.utf8.count) { return orderId }
        return "token:" + SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// Google's word that a Play purchase was voided (refunded, cancelled, charged back), from a push or
/// the voided-purchases read.
public struct GooglePlayVoid: Sendable, Hashable {
    public var purchaseToken: String
    public var orderId: String?
    public var voidedDate: Date
    /// Google's `voidedReason` (0 other … 7 chargeback), when known.
    public var reason: Int32?

    public init(purchaseToken: String, orderId: String?, voidedDate: Date, reason: Int32? = nil) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.voidedDate = voidedDate
        self.reason = reason
    }
}

extension LedgerStore {
    /// Where a void of a Play purchase applies: the recorded purchase's environment and transaction id,
    /// or (not recorded here) Production and the id the purchase would be recorded under.
    func googlePlayTarget(_ void: GooglePlayVoid) async throws -> (StoreEnvironment, String) {
        if let recorded = try await googlePlayToken(purchaseToken: void.purchaseToken, orderId: void.orderId) {
            return (recorded.environment, recorded.transactionId)
        }
        return (.production, GooglePlayToken.transactionId(orderId: void.orderId, token: void.purchaseToken))
    }

    /// Records a void found by the voided-purchases read as the purchase's refund, the same refund event
    /// however often it is read (its id is the token's), and the same path as Apple's refunds (journal,
    /// grant, webhooks). A void that a push brought first is then a second refund event, which changes
    /// nothing.
    public func recordGooglePlayVoid(_ void: GooglePlayVoid) async throws -> RefundEventOutcome {
        let (environment, transactionId) = try await googlePlayTarget(void)
        let tokenHash = SHA256.hash(data: Data(void.purchaseToken.utf8)).map { String(format: "%02x", $0) }.joined()
        let evidence = Array(
            SHA256.hash(
                data: Data(
                    [
                        "google_play_void", void.purchaseToken, void.orderId ?? "",
                        String(void.voidedDate.timeIntervalSince1970),
                    ]
                    .joined(separator: "\n").utf8)))
        return try await recordRefundEvent(
            RefundEvent(
                sourceEventId: "gp-void:" + tokenHash, kind: .refund, store: .googlePlay, environment: environment,
                transactionId: transactionId, signedDate: void.voidedDate, revocationReason: void.reason,
                evidenceSHA256: evidence))
    }

    /// Stores a verified Google Play push (a real-time developer notification) in `store_notifications`
    /// as `google_play:<Pub/Sub messageId>`, deduplicated on it: a voided purchase carries a refund the
    /// server then applies (``applyNotification(_:)``, the sweeper after a failure), as Apple's do.
    ///
    /// - Parameters:
    ///   - type: `VOIDED_PURCHASE`, `ONE_TIME_PRODUCT_PURCHASED`, `ONE_TIME_PRODUCT_CANCELED`, `TEST`, `OTHER`.
    ///   - void: the purchase voided, for `VOIDED_PURCHASE`.
    ///   - payload: the notification's JSON as Pub/Sub delivered it.
    public func storeGooglePlayNotification(
        messageId: String, type: String, eventDate: Date, void: GooglePlayVoid?, payload: Data
    ) async throws -> (notificationUUID: String, storage: NotificationStorage) {
        let uuid = "google_play:" + messageId
        try Validation.identifier(uuid, what: "messageId")
        guard (1...64).contains(type.utf8.count) else { throw LedgerError(.invalidInput, "type must be 1–64 bytes") }
        guard let text = String(data: payload, encoding: .utf8), !text.utf8.contains(0) else {
            throw LedgerError(.invalidInput, "the notification is not UTF-8 text without NUL")
        }
        var environment = StoreEnvironment.production
        var transactionId: String?
        if let void { (environment, transactionId) = try await googlePlayTarget(void) }
        let evidence = Data(SHA256.hash(data: payload))
        let inserted = try await client.query(
            """
            INSERT INTO store_notifications (notification_uuid, store, environment, notification_type, subtype,
                signed_at, transaction_id, refund_kind, revocation_reason, evidence_sha256, signed_payload)
            VALUES (\(uuid)::text, 'google_play', \(environment.rawValue)::text, \(type)::text, NULL,
                \(eventDate)::timestamptz, \(transactionId)::text, \(void == nil ? nil : "refund")::text,
                \(void?.reason)::integer, \(evidence)::bytea, \(text)::text)
            ON CONFLICT (notification_uuid) DO NOTHING
            """)
        return (uuid, inserted.affectedRows == 1 ? .stored : .duplicate)
    }
}

/// Who posted a Play purchase token Google said was pending (migration 0023): the purchase is recorded for
/// that user once Google completes the payment.
public struct GooglePlayPendingClaim: Sendable, Hashable {
    public var purchaseToken: String
    public var uid: String
    public var packageName: String
    public var productId: String
    public var claimedAt: Date
}

extension LedgerStore {
    /// Notes that `uid` posted the pending purchase `purchaseToken` of `productId`, once: the first user
    /// who posts a token claims it. Returns the claim as it stands (its `uid` another user's when another
    /// user claimed the token first).
    ///
    /// - Throws: `LedgerError(.invalidInput)` for values of another shape, `.userNotRegistered`, or
    ///   `PostgresError`.
    public func claimGooglePlayPending(
        purchaseToken: String, uid: String, packageName: String, productId: String
    ) async throws -> GooglePlayPendingClaim {
        guard (1...512).contains(purchaseToken.utf8.count), (3...255).contains(packageName.utf8.count),
            (1...140).contains(productId.utf8.count)
        else { throw LedgerError(.invalidInput, "a pending purchase's token, package or product is out of range") }
        do {
            let rows = try await client.query(
                """
                WITH claimed AS (
                    INSERT INTO google_play_pending_claims (purchase_token, uid, package_name, product_id)
                    VALUES (\(purchaseToken)::text, \(uid)::text, \(packageName)::text, \(productId)::text)
                    ON CONFLICT (purchase_token) DO NOTHING
                    RETURNING \(unsafeSQL: Self.claimColumns)
                )
                SELECT \(unsafeSQL: Self.claimColumns) FROM claimed
                UNION ALL
                SELECT \(unsafeSQL: Self.claimColumns) FROM google_play_pending_claims
                WHERE purchase_token = \(purchaseToken)::text AND NOT EXISTS (SELECT 1 FROM claimed)
                """)
            return try Self.claim(rows.single())
        } catch let error as PostgresError where error.sqlState == .foreignKeyViolation {
            throw LedgerError.userNotRegistered(uid)
        }
    }

    /// The claim of the pending purchase `purchaseToken`, if a user posted it pending.
    public func googlePlayPendingClaim(purchaseToken: String) async throws -> GooglePlayPendingClaim? {
        try await client.query(
            """
            SELECT \(unsafeSQL: Self.claimColumns) FROM google_play_pending_claims
            WHERE purchase_token = \(purchaseToken)::text
            """
        ).first.map(Self.claim)
    }

    /// Claims made since `since` whose purchase is not recorded yet, oldest first: what the sync asks
    /// Google about (a payment completed while its push was missed).
    public func openGooglePlayPendingClaims(since: Date, limit: Int = 200) async throws -> [GooglePlayPendingClaim] {
        try await client.query(
            """
            SELECT \(unsafeSQL: Self.claimColumns) FROM google_play_pending_claims c
            WHERE c.claimed_at > \(since)::timestamptz
              AND NOT EXISTS (SELECT 1 FROM google_play_purchases g WHERE g.purchase_token = c.purchase_token)
            ORDER BY c.claimed_at
            LIMIT \(max(0, limit))
            """
        ).map(Self.claim)
    }

    private static let claimColumns = "purchase_token, uid, package_name, product_id, claimed_at"

    private static func claim(_ row: PostgresRow) throws -> GooglePlayPendingClaim {
        let (token, uid, package, productId, claimedAt) = try row.decode((String, String, String, String, Date).self)
        return GooglePlayPendingClaim(
            purchaseToken: token, uid: uid, packageName: package, productId: productId, claimedAt: claimedAt)
    }
}
