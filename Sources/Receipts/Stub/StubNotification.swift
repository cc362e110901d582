import Foundation

/// A stub notification: ShopLedger's stand-in for an App Store Server Notification V2 in development and
/// tests, so that a purchase proven by a stub receipt can be refunded, its refund reversed, or its family
/// sharing revoked. Posted where a `signedPayload` goes; see `STUB-RECEIPTS.md`.
///
/// ```text
/// shopledger-stub-notification/1
/// bundle_id: com.memolease.sesac1
/// environment: Stub
/// notification_type: REFUND
/// notification_uuid: 5f0e6c1a-2b3d-4c5e-8f90-a1b2c3d4e5f6
/// signed_date_ms: 1763790000000
/// transaction_id: stub-0f4e2d8c-3b51-4a57-9d1e-6f0c2b7a9e13
/// product_id: com.memolease.sesac1.sprout2
/// in_app_ownership_type: PURCHASED
/// revocation_reason: 0
/// signature: hmac-sha256:<64 lowercase hex digits>
/// ```
///
/// Rules, as for stub receipts: the magic first line, `key: value` lines of printable ASCII, each key at
/// most once, unknown keys `malformed`, an optional last signature line (HMAC-SHA256 of the canonical
/// text, the lines above in that order with optional ones only when present). Required: `bundle_id`,
/// `environment` (must be `Stub`), `notification_type`, `notification_uuid`, `signed_date_ms`. The
/// transaction keys `transaction_id` and `product_id` go together (a `TEST` notification has neither);
/// `in_app_ownership_type` (default `PURCHASED`) and `revocation_reason` need them. Optional `subtype`.
public struct StubNotification: Sendable, Hashable {
    /// The first line of every stub notification.
    public static let magicLine = "shopledger-stub-notification/1"

    /// The transaction the notification is about.
    public struct Transaction: Sendable, Hashable {
        public var transactionId: String
        public var productId: String
        public var ownershipType: OwnershipType
        public var revocationReason: Int32?

        public init(
            transactionId: String, productId: String, ownershipType: OwnershipType = .purchased,
            revocationReason: Int32? = nil
        ) {
            self.transactionId = transactionId
            self.productId = productId
            self.ownershipType = ownershipType
            self.revocationReason = revocationReason
        }
    }

    public var bundleId: String
    public var environment: StoreEnvironment
    public var notificationType: VerifiedNotification.NotificationType
    public var subtype: String?
    public var notificationUUID: String
    public var signedDateMs: Int64
    public var transaction: Transaction?

    public init(
        bundleId: String, environment: StoreEnvironment = .stub,
        notificationType: VerifiedNotification.NotificationType,
        subtype: String? = nil, notificationUUID: String, signedDateMs: Int64, transaction: Transaction?
    ) {
        self.bundleId = bundleId
        self.environment = environment
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.signedDateMs = signedDateMs
        self.transaction = transaction
    }

    /// What the signature covers and the evidence hash is taken over.
    public var canonicalText: String {
        var lines = [
            Self.magicLine,
            "bundle_id: \(bundleId)",
            "environment: \(environment.rawValue)",
            "notification_type: \(notificationType.rawValue)",
        ]
        if let subtype { lines.append("subtype: \(subtype)") }
        lines.append("notification_uuid: \(notificationUUID)")
        lines.append("signed_date_ms: \(signedDateMs)")
        if let transaction {
            lines.append("transaction_id: \(transaction.transactionId)")
            lines.append("product_id: \(transaction.productId)")
            lines.append("in_app_ownership_type: \(transaction.ownershipType.rawValue)")
            if let reason = transaction.revocationReason { lines.append("revocation_reason: \(reason)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The notification as text, with an HMAC-SHA256 signature line when a secret is given.
    public func text(signedWith secret: String?) -> String {
        let canonical = canonicalText
        guard let secret else { return canonical }
        return canonical + "signature: hmac-sha256:\(StubText.sign(canonical, secret: secret))\n"
    }

    private static let keys = [
        "bundle_id", "environment", "notification_type", "subtype", "notification_uuid", "signed_date_ms",
        "transaction_id", "product_id", "in_app_ownership_type", "revocation_reason",
    ]

    /// Parses stub notification text strictly; checks nothing beyond the format. Returns the notification
    /// and the signature bytes, if signed.
    static func parse(
        _ text: String, maxBytes: Int
    ) throws(ReceiptRefusal) -> (
        notification: StubNotification, signature: [UInt8]?
    ) {
        let what = "stub notification"
        var fields: [String: String] = [:]
        var signature: [UInt8]?
        for line in try StubText.lines(text, magicLine: magicLine, maxBytes: maxBytes, what: what) {
            guard signature == nil else { throw ReceiptRefusal(.malformed, "the signature line must be the last line") }
            let (key, value) = try StubText.keyValue(Substring(line), what: what)
            if key == "signature" {
                signature = try StubText.signature(value)
                continue
            }
            guard keys.contains(key) else { throw ReceiptRefusal(.malformed, "unknown \(what) key \(key.prefix(40))") }
            guard fields.updateValue(value, forKey: key) == nil else {
                throw ReceiptRefusal(.malformed, "\(key) appears twice")
            }
        }
        guard let bundleId = fields["bundle_id"], let environment = fields["environment"],
            let type = fields["notification_type"], let uuid = fields["notification_uuid"],
            let signed = fields["signed_date_ms"]
        else {
            throw ReceiptRefusal(
                .malformed,
                "\(what) needs bundle_id, environment, notification_type, notification_uuid and signed_date_ms")
        }
        var transaction: Transaction?
        switch (fields["transaction_id"], fields["product_id"]) {
        case (let transactionId?, let productId?):
            let reason = try fields["revocation_reason"].map { text throws(ReceiptRefusal) in
                guard let value = Int32(text) else {
                    throw ReceiptRefusal(.malformed, "revocation_reason must be an integer")
                }
                return value
            }
            transaction = Transaction(
                transactionId: transactionId, productId: productId,
                ownershipType: fields["in_app_ownership_type"].map(OwnershipType.init(rawValue:)) ?? .purchased,
                revocationReason: reason)
        case (nil, nil):
            guard fields["in_app_ownership_type"] == nil, fields["revocation_reason"] == nil else {
                throw ReceiptRefusal(
                    .malformed, "in_app_ownership_type and revocation_reason need transaction_id and product_id")
            }
        default:
            throw ReceiptRefusal(.malformed, "transaction_id and product_id go together")
        }
        let notification = StubNotification(
            bundleId: bundleId, environment: StoreEnvironment(rawValue: environment),
            notificationType: .init(rawValue: type), subtype: fields["subtype"], notificationUUID: uuid,
            signedDateMs: try StubText.milliseconds(signed, "signed_date_ms"), transaction: transaction)
        return (notification, signature)
    }
}
