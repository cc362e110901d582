import Crypto
import Foundation
import GooglePlay
import Ledger
import Logging
import Receipts

/// Learns what a Google Play purchase's buyer was charged and books it, as the ledger learns an App Store
/// purchase's price later: Google's purchase answer carries no price, so a Play purchase is recorded
/// unpriced, then its order (the Orders API's `orders.get`, or `orders.batchget` in a sync) states the
/// amount charged, booked as a `price_learned` entry (migration 0008). An order that is not the
/// purchase's, not charged, or states no exact amount books nothing: never guessed.
package struct GooglePlayPricer: Sendable {
    let client: GooglePlayClient
    let ledger: LedgerStore
    let logger: Logger
    /// When Google stated the price: the entry's effective time (a test's clock moves).
    let now: @Sendable () -> Date

    package init(
        client: GooglePlayClient, ledger: LedgerStore, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.client = client
        self.ledger = ledger
        self.logger = logger
        self.now = now
    }

    package enum Outcome: Sendable, Hashable {
        /// Booked now.
        case priced(Money)
        /// The purchase had this price already: nothing written.
        case known(Money)
        /// Nothing booked, and why (the attempt is noted for the back-off).
        case notPriced(String)
    }

    /// Asks Google for the order of `record` (within `deadline`, when given) and books what it charged.
    ///
    /// - Throws: ``GooglePlayError`` (Google did not answer, or answered an error) or the ledger's errors.
    package func price(_ record: GooglePlayToken, deadline: ContinuousClock.Instant? = nil) async throws -> Outcome {
        guard let orderId = record.orderId else { return .notPriced("the purchase has no order id") }
        let api = deadline.map { client.within($0) } ?? client
        do {
            return try await book(try await api.order(orderId), for: record)
        } catch let error as GooglePlayError where error.code == .apiError && error.httpStatus == 404 {
            return .notPriced("Google has no order \(orderId) for this package")
        }
    }

    /// Books what `order` charged for `record`'s purchase, when the order is that purchase's and states it.
    package func book(_ order: PlayOrder, for record: GooglePlayToken) async throws -> Outcome {
        let metadata: Logger.Metadata = ["transaction": "\(record.transactionId)"]
        guard order.orderId == record.orderId else { return .notPriced("Google answered another order") }
        let charge: PlayOrder.Charge
        switch order.charge(for: record.productId, token: record.purchaseToken) {
        case .success(let value): charge = value
        case .failure(let reason):
            logger.notice("a Google Play order prices nothing", metadata: metadata.merging(["why": "\(reason)"]) { $1 })
            return .notPriced(reason.description)
        }
        switch try await ledger.recordLearnedPrice(transaction(record, order: order, charge: charge)) {
        case .recorded(let money): return .priced(money)
        case .duplicate(let money): return .known(money)
        case .notRecorded: return .notPriced("the purchase is not recorded")
        case .conflict(let recorded, let stated):
            return .notPriced(
                "Google's order states \(stated.amountMilli) \(stated.currency), the ledger \(recorded.amountMilli) "
                    + recorded.currency)
        case .evidenceDiffers: return .notPriced("the order is not the recorded purchase")
        case .familyShared: return .notPriced("a family-shared purchase has no price")
        }
    }

    /// The purchase as the ledger recorded it, with the order's charge as its price and the order's
    /// fields' SHA-256 as the evidence.
    func transaction(_ record: GooglePlayToken, order: PlayOrder, charge: PlayOrder.Charge) -> VerifiedTransaction {
        let evidence = Array(
            SHA256.hash(
                data: Data(
                    [
                        "google_play_order", record.packageName, order.orderId, record.purchaseToken, record.productId,
                        order.stateValue ?? "", String(charge.milliunits), charge.currency,
                    ].joined(separator: "\n").utf8)))
        return VerifiedTransaction(
            store: .googlePlay, environment: record.environment, transactionId: record.transactionId,
            originalTransactionId: record.transactionId, bundleId: record.packageName, productId: record.productId,
            productType: .nonConsumable, purchaseDate: record.purchaseDate, originalPurchaseDate: record.purchaseDate,
            signedDate: now(), priceMilli: charge.milliunits, currency: charge.currency, evidenceSHA256: evidence)
    }
}
