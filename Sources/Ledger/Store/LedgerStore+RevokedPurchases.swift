import Crypto
import Foundation
import Postgres
import Receipts

extension LedgerStore {
    /// Records a purchase whose signed transaction says the store has revoked it already
    /// (`revocationDate`: refunded, or a family-sharing revoke): the purchase happened, so it is
    /// recorded, and its revocation with it, in one transaction, so that it is never owned and its
    /// revenue nets to zero. The revocation is kept as a refund event of the transaction's own
    /// (`RefundEvent(revocationOf:)`), applied as a notification's would be.
    ///
    /// Posted again (by its owner) it is a duplicate; by another user a conflict, and then nothing
    /// is written, the revocation neither.
    func recordRevokedPurchase(_ input: PurchaseInput, revocation: RefundEvent) async throws -> PurchaseOutcome {
        try Validation.refundEvent(revocation)
        do {
            let recorded: Purchase? = try await client.withTransaction(.retrying(3)) { connection in
                // The event first: it inserts or locks the transaction's row, so the purchase
                // statement takes its locking path, as after a refund notification.
                try await connection.query(Self.insertRefundEvent(revocation))
                let inserted = try await connection.query(PurchaseStatement.single(input, lockingTransaction: true))
                    .single()
                    .insertResult()
                try inserted.refuseRefused(input)
                if inserted.recordedAt == nil {
                    // Recorded before. Its owner learns of the revocation now; anyone else changes nothing.
                    let owner = try await connection.query(
                        """
                        SELECT uid FROM purchases WHERE store = \(input.store)::text
                          AND environment = \(input.environment)::text AND transaction_id = \(input.transactionId)::text
                        """
                    ).first?.decode(String.self, at: 0)
                    guard owner == input.uid else { throw RevokedPurchaseOfAnotherUser() }
                }
                let state = try await applyRefundEvents(
                    store: input.store, environment: input.environment, transactionId: input.transactionId,
                    on: connection)
                guard let recordedAt = inserted.recordedAt, let item = inserted.item else { return nil }
                return input.purchase(item: item, recordedAt: recordedAt, state: state ?? .refunded)
            }
            if let recorded { return .recorded(recorded) }
        } catch is RevokedPurchaseOfAnotherUser {
            // Rolled back; classified below as the conflict it is.
        }
        return try await classifyExisting(input)
    }

    /// Inserts a refund event (nothing when its id is known) and inserts or locks its transaction's
    /// `store_transactions` row.
    static func insertRefundEvent(_ event: RefundEvent) -> PostgresQuery {
        """
        WITH event AS (
            INSERT INTO refund_events (source_event_id, kind, store, environment, transaction_id, signed_at,
                revocation_reason, evidence_sha256)
            VALUES (\(event.sourceEventId)::text, \(event.kind.rawValue)::text, \(event.store.rawValue)::text,
                \(event.environment.rawValue)::text, \(event.transactionId)::text, \(event.signedDate)::timestamptz,
                \(event.revocationReason)::integer, \(Data(event.evidenceSHA256))::bytea)
            ON CONFLICT (source_event_id) DO NOTHING
            RETURNING store, environment, transaction_id
        )
        INSERT INTO store_transactions (store, environment, transaction_id)
        VALUES (\(event.store.rawValue)::text, \(event.environment.rawValue)::text, \(event.transactionId)::text)
        ON CONFLICT (store, environment, transaction_id) DO UPDATE SET store = EXCLUDED.store WHERE false
        """
    }
}

private struct RevokedPurchaseOfAnotherUser: Error {}

extension RefundEvent {
    /// The revocation a signed transaction carries (`revocationDate`), as a refund event of its own:
    /// a refund, or a family revoke for a family-shared purchase. Its id is derived from the
    /// transaction, so posting the transaction again records it once. Nil when not revoked.
    public init?(revocationOf transaction: VerifiedTransaction) {
        guard let revocationDate = transaction.revocationDate else { return nil }
        let key = "\(transaction.store.rawValue)|\(transaction.environment.rawValue)|\(transaction.transactionId)"
        let digest = SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
        self.init(
            sourceEventId: "transaction-revocation:" + digest,
            kind: transaction.ownershipType == .familyShared ? .familyRevoke : .refund,
            store: transaction.store, environment: transaction.environment, transactionId: transaction.transactionId,
            signedDate: revocationDate, revocationReason: transaction.revocationReason,
            evidenceSHA256: transaction.evidenceSHA256)
    }
}
