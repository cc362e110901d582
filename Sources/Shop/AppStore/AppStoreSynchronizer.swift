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
/// It keeps what it verified: each environment's notification history is stored page by page as the
/// pages arrive, and each step (notification history per environment, prices, refund history) runs
/// whatever another one did. A failure (of Apple, of verification, of the database) is counted,
/// logged and listed in the report with its step and environment; the next sync tries again.
///
/// Idempotent: a notification is stored once whoever brings it (the live endpoint or a sync), a
/// refund found in the history is recorded under an id derived from the transaction and its
/// revocation date, and a purchase is priced once (the ledger's `purchase_prices` key), so a second
/// sync finds them recorded and changes nothing.
public struct AppStoreSynchronizer: Sendable {
    /// A part of the sync that can fail on its own.
    public enum Step: String, Sendable, Hashable, CustomStringConvertible {
        case notificationHistory = "notification history"
        case prices
        case refundHistory = "refund history"

        public var description: String { rawValue }
    }

    /// Something that failed: a whole step (in one environment, for the notification history) that
    /// stopped there, or one notification or purchase within it.
    public struct Failure: Sendable, Hashable, CustomStringConvertible {
        public var step: Step
        public var environment: StoreEnvironment?
        /// The notification UUID or transaction id it was about; nil when the step stopped.
        public var subject: String?
        public var reason: String

        public var description: String {
            "\(step)" + (environment.map { " (\($0))" } ?? "") + (subject.map { ", \($0)" } ?? "") + ": \(reason)"
        }
    }

    /// A notification this run stored: Apple's delivery did not bring it (or it was not stored then).
    public struct StoredNotification: Sendable, Hashable {
        public var uuid: String
        public var type: String
        public var environment: StoreEnvironment
        /// Apple's last attempt to send it to our endpoint, when Apple lists one.
        public var lastAttempt: NotificationSendAttempt?
    }

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
        /// Everything that failed (logged); the next sync tries it again.
        public var failures = 0
        /// The first ``listLimit`` of them, with step, environment and why.
        public var failed: [Failure] = []
        /// Environments whose notification history was not all fetched and stored: a run that keeps
        /// going (`serve`'s) asks for the same period again.
        public var notificationHistoryIncomplete: Set<StoreEnvironment> = []
        /// What did not fail but an operator should know: a start date older than Apple keeps, clamped.
        public var warnings: [String] = []
        /// The first ``listLimit`` notifications stored now, with Apple's last attempt to deliver each.
        public var storedNotifications: [StoredNotification] = []
        /// Of the notifications stored now, how many per Apple's last attempt's result (`TIMED_OUT`,
        /// ...; `none` when Apple lists no attempt): why they did not arrive.
        public var lastAttemptResults: [String: Int] = [:]

        /// Lists (failures, stored notifications) keep this many entries; the counts count them all.
        public static let listLimit = 20

        public init() {}

        /// Whether the notification history of every environment was fetched and stored.
        public var notificationHistoryComplete: Bool { notificationHistoryIncomplete.isEmpty }

        mutating func record(_ failure: Failure) {
            failures += 1
            if failed.count < Self.listLimit { failed.append(failure) }
        }

        mutating func recordStored(_ entry: NotificationHistoryEntry) {
            notificationsStored += 1
            lastAttemptResults[entry.lastAttempt?.result ?? "none", default: 0] += 1
            guard storedNotifications.count < Self.listLimit else { return }
            storedNotifications.append(
                StoredNotification(
                    uuid: entry.notification.notificationUUID, type: entry.notification.notificationType.rawValue,
                    environment: entry.notification.environment, lastAttempt: entry.lastAttempt))
        }

        public var description: String {
            var text =
                "notifications: \(notificationsSeen) seen, \(notificationsStored) new, \(notificationEventsApplied) applied; "
                + "prices: \(unpricedChecked) unpriced purchases asked, \(pricesLearned) priced; "
                + "refund history: \(customersChecked) customers, \(refundsSeen) refunds seen, \(refundsApplied) applied; "
                + "\(failures) failures"
            if !lastAttemptResults.isEmpty {
                text +=
                    "; Apple's last delivery attempt of those new: "
                    + lastAttemptResults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                        separator: ", ")
            }
            return text
        }
    }

    let api: AppStoreServerAPIClient
    let ledger: LedgerStore
    let logger: Logger
    /// At most this many unpriced purchases are asked about per run (never asked first, then the least
    /// asked, oldest recorded first among equals; one Apple did not price waits out a back-off, see
    /// `PriceLookupBackoff`); the client's per-endpoint rate limit paces them.
    let priceLimit: Int

    /// The time a run asks which price lookups are due and notes its attempts at (a test's clock moves),
    /// and measures Apple's notification history windows from.
    let now: @Sendable () -> Date

    /// How far inside Apple's notification history window a clamped start date is put: Apple measures
    /// the window at its own clock when the request arrives, so a start exactly on the boundary could
    /// be refused.
    static let windowMargin: TimeInterval = 3_600

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

    /// Notification history from `since` to `until` (production and the sandbox, or the sandbox alone;
    /// `since` clamped to what each keeps), then prices for purchases recorded without one, then refund
    /// history for every live purchase's customer, in the purchase's environment.
    ///
    /// Each step runs whatever the others did; what failed is in the report (``Report/failed``).
    ///
    /// - Throws: only `CancellationError`, when the calling task is cancelled.
    public func sync(since: Date, until: Date = Date()) async throws -> Report {
        var report = Report()
        for environment in api.notificationEnvironments {
            try await run(.notificationHistory, in: environment, into: &report) { report in
                try await syncNotifications(since: since, until: until, in: environment, into: &report)
            }
        }
        try await run(.prices, into: &report) { try await syncPrices(into: &$0) }
        try await run(.refundHistory, into: &report) { try await syncRefunds(into: &$0) }
        return report
    }

    /// Runs one step; its failure is recorded in the report (what it did before is kept), and
    /// cancellation ends the sync.
    private func run(
        _ step: Step, in environment: StoreEnvironment? = nil, into report: inout Report,
        _ body: (inout Report) async throws -> Void
    ) async throws {
        do {
            try await body(&report)
        } catch {
            // A cancelled task's database or HTTP call can fail with its own error: cancellation wins.
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            if step == .notificationHistory, let environment {
                report.notificationHistoryIncomplete.insert(environment)
            }
            let failure = Failure(step: step, environment: environment, reason: "\(error)")
            report.record(failure)
            logger.warning("App Store sync step failed", metadata: ["failure": "\(failure)"])
        }
    }

    /// The start to ask `environment`'s notification history from: `since`, or the start of what Apple
    /// keeps when `since` is older (warned); nil when the whole period is older (warned, not asked).
    func start(
        _ since: Date, until: Date, in environment: StoreEnvironment, into report: inout Report
    ) -> Date? {
        let retention = AppStoreServerAPIClient.notificationHistoryRetention(in: environment)
        let earliest = now().addingTimeInterval(-retention + Self.windowMargin)
        guard since < earliest else { return since }
        let format = ISO8601DateFormatter()
        let asked = earliest < until ? "asked from \(format.string(from: earliest))" : "the period is not asked"
        let warning =
            "notification history (\(environment)): the start \(format.string(from: since)) is older than the "
            + "\(Int(retention / 86_400)) days Apple keeps; \(asked)"
        report.warnings.append(warning)
        logger.warning("App Store sync start clamped to Apple's window", metadata: ["warning": "\(warning)"])
        return earliest < until ? earliest : nil
    }

    /// One environment's notification history, stored and applied page by page: a later page failing
    /// (thrown) keeps the pages before it.
    func syncNotifications(
        since: Date, until: Date, in environment: StoreEnvironment, into report: inout Report
    ) async throws {
        guard let start = start(since, until: until, in: environment, into: &report) else { return }
        for try await page in api.notificationHistoryPages(from: start, to: until, in: environment) {
            report.notificationsSeen += page.count
            for entry in page {
                try Task.checkCancellation()
                try await store(entry, into: &report)
            }
        }
    }

    /// Stores and applies one notification from Apple's history. One that cannot be stored is counted
    /// and marks the environment's history incomplete (asked again); one stored is applied again by
    /// the notification sweeper if applying fails here.
    private func store(_ entry: NotificationHistoryEntry, into report: inout Report) async throws {
        let uuid = entry.notification.notificationUUID
        let environment = entry.notification.environment
        do {
            if try await ledger.storeNotification(entry.notification, signedPayload: entry.signedPayload) == .stored {
                report.recordStored(entry)
            }
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            report.notificationHistoryIncomplete.insert(environment)
            report.record(
                Failure(step: .notificationHistory, environment: environment, subject: uuid, reason: "\(error)"))
            logger.warning(
                "could not store a notification from Apple's history",
                metadata: ["notification": "\(uuid)", "error": "\(error)"])
            return
        }
        do {
            switch try await ledger.applyNotification(uuid) {
            case .applied?, .parked?: report.notificationEventsApplied += 1
            case .conflict?:
                report.record(
                    Failure(
                        step: .notificationHistory, environment: environment, subject: uuid,
                        reason: "its refund event conflicts with a recorded one"))
                logger.warning(
                    "notification's refund event conflicts with a recorded one", metadata: ["notification": "\(uuid)"])
            case .duplicate?, nil: break
            }
        } catch {
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            report.record(
                Failure(step: .notificationHistory, environment: environment, subject: uuid, reason: "\(error)"))
            logger.warning(
                "could not apply a notification from Apple's history",
                metadata: ["notification": "\(uuid)", "error": "\(error)"])
        }
    }

    /// Asks Apple for the signed transaction of each purchase recorded without a price and books its
    /// price. A payload that does not verify is refused by the client (nothing written); one that
    /// does not match the purchase, or states another price, writes nothing either (logged). Each
    /// purchase not priced waits before the next run asks again (`price_lookups`).
    ///
    /// - Throws: when the work list cannot be read (the database), or `CancellationError`.
    func syncPrices(into report: inout Report) async throws {
        for unpriced in try await ledger.unpricedPurchases(limit: priceLimit, dueAt: now()) {
            try Task.checkCancellation()
            report.unpricedChecked += 1
            let metadata: Logger.Metadata = ["transaction": "\(unpriced.transactionId)"]
            let notPriced: String?
            do {
                notPriced = try await price(unpriced, into: &report, metadata: metadata)
            } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                report.record(Self.failure(.prices, unpriced, "\(error)"))
                logger.warning("could not price a purchase", metadata: metadata.merging(["error": "\(error)"]) { $1 })
                notPriced = "\(error)"
            }
            guard let notPriced else { continue }
            do {
                let next = try await ledger.recordPriceLookupFailure(unpriced, outcome: notPriced, at: now())
                logger.debug("price lookup backs off", metadata: metadata.merging(["until": "\(next)"]) { $1 })
            } catch {
                report.record(Self.failure(.prices, unpriced, "could not note the lookup: \(error)"))
                logger.warning(
                    "could not note a price lookup", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            }
        }
    }

    private static func failure(_ step: Step, _ unpriced: UnpricedPurchase, _ reason: String) -> Failure {
        Failure(step: step, environment: unpriced.environment, subject: unpriced.transactionId, reason: reason)
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
            let reason = "Apple's signed transaction does not price the recorded purchase"
            report.record(Self.failure(.prices, unpriced, reason))
            logger.warning("\(reason)", metadata: metadata)
            return reason
        }
    }

    /// Refund history for every live purchase's customer, in the purchase's environment. One customer's
    /// history failing is recorded and the others are still asked.
    ///
    /// - Throws: when the work list cannot be read (the database), or `CancellationError`.
    func syncRefunds(into report: inout Report) async throws {
        for anchor in try await ledger.refundCheckAnchors() {
            try Task.checkCancellation()
            report.customersChecked += 1
            let refunds: VerifiedTransactions
            do {
                refunds = try await api.refundHistory(anchor.transactionId, in: anchor.environment)
            } catch let error as AppStoreServerAPIError {
                report.record(
                    Failure(
                        step: .refundHistory, environment: anchor.environment, subject: anchor.transactionId,
                        reason: "\(error)"))
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
                    if error is CancellationError || Task.isCancelled { throw CancellationError() }
                    report.record(
                        Failure(
                            step: .refundHistory, environment: transaction.environment,
                            subject: transaction.transactionId, reason: "\(error)"))
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
