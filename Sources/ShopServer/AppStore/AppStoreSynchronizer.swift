import AppStoreServerAPI
import Foundation
import Ledger
import Logging
import Receipts

/// Catches up with what Apple knows and the ledger missed: notifications Apple sent while we were
/// down (Get Notification History → the notification inbox, deduplicated on `notificationUUID`, then
/// applied), and refunds of purchases still live here (Get Refund History → refund events).
///
/// It also prices purchases recorded without a price (classic receipts' entries recorded while the API
/// did not answer): Get Transaction Info in the purchase's environment, verified like every signed
/// payload, booked as a `price_learned` journal entry (at most ``priceLimit`` per run).
///
/// Idempotent: a notification is stored once whoever brings it (the live endpoint or a sync), a
/// refund found in the history is recorded under an id derived from the transaction and its
/// revocation date, and a purchase is priced once (the ledger's `purchase_prices` key), so a second
/// sync finds them recorded and changes nothing.
public struct AppStoreSynchronizer: Sendable {
    /// What one sync did.
    public struct Report: Sendable, Hashable, CustomStringConvertible {
        /// Notifications in Apple's history for the period.
        public var notificationsSeen = 0
        /// Of those, stored now (the others were in the inbox already).
        public var notificationsStored = 0
        /// Refunds, reversals and revokes from notifications that changed or parked a purchase now.
        public var notificationEventsApplied = 0
        /// Customers (user and environment) whose refund history was asked for.
        public var customersChecked = 0
        /// Refunded transactions Apple listed for them.
        public var refundsSeen = 0
        /// Refunds of live purchases recorded now.
        public var refundsApplied = 0
        /// Purchases recorded without a price that Apple was asked to price.
        public var unpricedChecked = 0
        /// Of those, priced now (a `price_learned` entry each).
        public var pricesLearned = 0
        /// Steps that failed (logged); the next sync tries them again.
        public var failures = 0

        public var description: String {
            "notifications: \(notificationsSeen) seen, \(notificationsStored) new, \(notificationEventsApplied) applied; "
                + "prices: \(unpricedChecked) unpriced purchases asked, \(pricesLearned) priced; "
                + "refund history: \(customersChecked) customers, \(refundsSeen) refunds seen, \(refundsApplied) applied; "
                + "\(failures) failures"
        }
    }

    let api: AppStoreServerAPIClient
    let ledger: LedgerStore
    let logger: Logger
    /// At most this many unpriced purchases are asked about per run (never asked first, then the least
    /// asked, oldest recorded first among equals; one Apple did not price waits out a back-off, see
    /// `PriceLookupBackoff`); the client's per-endpoint rate limit paces them.
    let priceLimit: Int

    /// The time a run asks which price lookups are due and notes its attempts at (a test's clock moves).
    let now: @Sendable () -> Date

    public init(
        api: AppStoreServerAPIClient, ledger: LedgerStore, logger: Logger, priceLimit: Int = 200,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.api = api
        self.ledger = ledger
        self.logger = logger
        self.priceLimit = priceLimit
        self.now = now
    }

    /// Notification history from `since` to now (production and the sandbox, or the sandbox alone), then
    /// prices for purchases recorded without one, then refund history for every live purchase's
    /// customer, in the purchase's environment.
    ///
    /// - Throws: ``AppStoreServerAPIError`` when the notification history cannot be fetched (nothing of
    ///   it is stored unverified); refund-history failures per customer are counted and logged.
    public func sync(since: Date, until: Date = Date()) async throws -> Report {
        var report = Report()
        try await syncNotifications(since: since, until: until, into: &report)
        try await syncPrices(into: &report)
        try await syncRefunds(into: &report)
        return report
    }

    func syncNotifications(since: Date, until: Date, into report: inout Report) async throws {
        var entries: [NotificationHistoryEntry] = []
        for environment in api.notificationEnvironments {
            entries += try await api.notificationHistory(from: since, to: until, in: environment)
        }
        report.notificationsSeen += entries.count
        for entry in entries {
            try Task.checkCancellation()
            let uuid = entry.notification.notificationUUID
            do {
                if try await ledger.storeNotification(entry.notification, signedPayload: entry.signedPayload) == .stored
                {
                    report.notificationsStored += 1
                }
                switch try await ledger.applyNotification(uuid) {
                case .applied?, .parked?: report.notificationEventsApplied += 1
                case .conflict?:
                    report.failures += 1
                    logger.warning(
                        "notification's refund event conflicts with a recorded one",
                        metadata: ["notification": "\(uuid)"])
                case .duplicate?, nil: break
                }
            } catch {
                report.failures += 1
                logger.warning(
                    "could not store or apply a notification from Apple's history",
                    metadata: ["notification": "\(uuid)", "error": "\(error)"])
            }
        }
    }

    /// Asks Apple for the signed transaction of each purchase recorded without a price and books its
    /// price. A payload that does not verify is refused by the client (nothing written); one that
    /// does not match the purchase, or states another price, writes nothing either (logged). Each
    /// purchase not priced waits before the next run asks again (`price_lookups`).
    func syncPrices(into report: inout Report) async throws {
        for unpriced in try await ledger.unpricedPurchases(limit: priceLimit, dueAt: now()) {
            try Task.checkCancellation()
            report.unpricedChecked += 1
            let metadata: Logger.Metadata = ["transaction": "\(unpriced.transactionId)"]
            let notPriced: String?
            do {
                notPriced = try await price(unpriced, into: &report, metadata: metadata)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                report.failures += 1
                logger.warning("could not price a purchase", metadata: metadata.merging(["error": "\(error)"]) { $1 })
                notPriced = "\(error)"
            }
            guard let notPriced else { continue }
            do {
                let next = try await ledger.recordPriceLookupFailure(unpriced, outcome: notPriced, at: now())
                logger.debug("price lookup backs off", metadata: metadata.merging(["until": "\(next)"]) { $1 })
            } catch {
                report.failures += 1
                logger.warning(
                    "could not note a price lookup", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            }
        }
    }

    /// Asks Apple about one unpriced purchase and books the price it states: nil when the purchase is
    /// priced now (or was already), otherwise why not (the attempt is then noted for the back-off).
    private func price(
        _ unpriced: UnpricedPurchase, into report: inout Report, metadata: Logger.Metadata
    ) async throws -> String? {
        let answer = try await api.transactionInfo(unpriced.transactionId, in: unpriced.environment)
        guard
            let signed = answer.transactions.first(where: { $0.transactionId == unpriced.transactionId }),
            signed.priceMilli != nil
        else {
            logger.warning("Apple's transaction info states no price for this purchase", metadata: metadata)
            return "Apple's transaction info states no price"
        }
        switch try await ledger.recordLearnedPrice(signed) {
        case .recorded:
            report.pricesLearned += 1
            return nil
        case .duplicate, .notRecorded:
            return nil
        case .conflict, .evidenceDiffers, .familyShared:
            report.failures += 1
            logger.warning("Apple's signed transaction does not price the recorded purchase", metadata: metadata)
            return "Apple's signed transaction does not price the recorded purchase"
        }
    }

    func syncRefunds(into report: inout Report) async throws {
        for anchor in try await ledger.refundCheckAnchors() {
            try Task.checkCancellation()
            report.customersChecked += 1
            let refunds: VerifiedTransactions
            do {
                refunds = try await api.refundHistory(anchor.transactionId, in: anchor.environment)
            } catch let error as AppStoreServerAPIError {
                report.failures += 1
                logger.warning(
                    "could not fetch refund history",
                    metadata: ["transaction": "\(anchor.transactionId)", "error": "\(error)"])
                continue
            }
            report.refundsSeen += refunds.transactions.count
            for transaction in refunds.transactions {
                guard let event = Self.refundEvent(for: transaction) else { continue }
                do {
                    // Only purchases recorded here and still live: the others need nothing, or are not ours.
                    let state = try await ledger.purchaseState(
                        store: transaction.store, environment: transaction.environment,
                        transactionId: transaction.transactionId)
                    guard state == .live else { continue }
                    if case .applied = try await ledger.recordRefundEvent(event) { report.refundsApplied += 1 }
                } catch {
                    report.failures += 1
                    logger.warning(
                        "could not record a refund from Apple's refund history",
                        metadata: ["transaction": "\(transaction.transactionId)", "error": "\(error)"])
                }
            }
        }
    }

    /// The refund event a refunded transaction in Apple's refund history stands for: signed at its
    /// revocation date, identified by transaction and revocation date (stable across syncs).
    static func refundEvent(for transaction: VerifiedTransaction) -> RefundEvent? {
        guard let revoked = transaction.revocationDate else { return nil }
        let kind: RefundEvent.Kind = transaction.revocationType == "FAMILY_REVOKE" ? .familyRevoke : .refund
        let milliseconds = Int64((revoked.timeIntervalSince1970 * 1000).rounded())
        return RefundEvent(
            sourceEventId:
                "refund-history:\(transaction.environment.rawValue):\(transaction.transactionId):\(milliseconds)",
            kind: kind, store: transaction.store, environment: transaction.environment,
            transactionId: transaction.transactionId, signedDate: revoked,
            revocationReason: transaction.revocationReason,
            evidenceSHA256: transaction.evidenceSHA256)
    }
}
