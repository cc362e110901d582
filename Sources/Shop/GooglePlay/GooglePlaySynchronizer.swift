import Foundation
import GooglePlay
import Ledger
import Logging
import Receipts
import ServiceLifecycle

/// The Google Play side of a sync (`shopledger google sync`, and every `--google-play-sync-interval` in
/// `serve`): Google's voided purchases since a time, each recorded as its purchase's refund through the
/// same refund path as Apple's (so a missed push is recovered), the acknowledgements still owed to
/// Google retried until its three-day deadline, the pending purchases Google completed recorded for the
/// users who posted them, and the purchases recorded unpriced priced from their
/// orders (``GooglePlayPricer``; at most ``priceLimit`` per run, each one not priced backing off as App
/// Store lookups do).
package struct GooglePlaySynchronizer: Sendable {
    let client: GooglePlayClient
    let ledger: LedgerStore
    let logger: Logger
    let priceLimit: Int
    /// The time a run notes its price lookups at and books prices as stated at (a test's clock moves).
    let now: @Sendable () -> Date

    package init(
        client: GooglePlayClient, ledger: LedgerStore, logger: Logger = Logger(label: "shopledger.googleplay"),
        priceLimit: Int = 1_000, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.client = client
        self.ledger = ledger
        self.logger = logger
        self.priceLimit = priceLimit
        self.now = now
    }

    package struct Report: Sendable, Hashable, CustomStringConvertible {
        /// Voided purchases Google listed.
        package var voidsRead = 0
        /// Of them, refunds applied to a recorded purchase now.
        package var refundsApplied = 0
        /// Of them, refunds kept for a purchase not recorded (yet).
        package var refundsParked = 0
        /// Of them, already recorded before (nothing written).
        package var refundsKnown = 0
        /// Acknowledgements Google took now.
        package var acknowledged = 0
        /// Acknowledgements still owed after this run.
        package var acknowledgementsOwed = 0
        /// Whether every page of voided purchases was read and recorded.
        package var voidsComplete = true
        /// Unpriced purchases whose orders were asked for.
        package var unpricedChecked = 0
        /// Of them, priced now (a `price_learned` entry each).
        package var pricesLearned = 0
        /// Of them, not priced: Google did not answer (asked again next run) or its order does not say.
        package var pricesMissing = 0
        /// Pending purchases posted in Google's three days and not recorded, asked about again.
        package var pendingChecked = 0
        /// Of them, recorded now for the user who posted them (Google completed the payment).
        package var pendingRecorded = 0

        package var description: String {
            "voids \(voidsRead) (applied \(refundsApplied), parked \(refundsParked), known \(refundsKnown)"
                + (voidsComplete ? ")" : ", incomplete)")
                + ", acknowledged \(acknowledged), still owed \(acknowledgementsOwed)"
                + ", prices: \(unpricedChecked) unpriced asked, \(pricesLearned) priced, \(pricesMissing) not"
                + ", pending: \(pendingChecked) asked, \(pendingRecorded) recorded"
        }
    }

    package func sync(since: Date) async throws -> Report {
        var report = Report()
        let acknowledger = GooglePlayAcknowledger(client: client, ledger: ledger, logger: logger)
        for owed in try await ledger.googlePlayAcknowledgementsOwed() {
            if await acknowledger.acknowledge(owed) {
                report.acknowledged += 1
            } else {
                report.acknowledgementsOwed += 1
            }
        }
        try await syncPending(into: &report)
        try await syncPrices(into: &report)
        do {
            try await client.voidedPurchases(since: since) { page in
                for voided in page {
                    report.voidsRead += 1
                    let outcome = try await ledger.recordGooglePlayVoid(
                        GooglePlayVoid(
                            purchaseToken: voided.purchaseToken, orderId: voided.orderId, voidedDate: voided.voidedDate,
                            reason: voided.voidedReason.map(Int32.init)))
                    switch outcome {
                    case .applied: report.refundsApplied += 1
                    case .parked: report.refundsParked += 1
                    case .duplicate, .conflict: report.refundsKnown += 1
                    }
                }
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            report.voidsComplete = false
            logger.warning("could not read Google Play's voided purchases", metadata: ["error": "\(error)"])
        }
        return report
    }
}

extension GooglePlaySynchronizer {
    /// Asks Google again about each pending purchase a user posted within Google's three days and that is
    /// not recorded, and records those it says are paid for that user (a push missed or not configured).
    ///
    /// - Throws: when the work list cannot be read (the database), or `CancellationError`.
    func syncPending(into report: inout Report) async throws {
        let recording = GooglePlayRecording(client: client, ledger: ledger, logger: logger)
        let since = now().addingTimeInterval(-LedgerStore.googleAcknowledgementWindow)
        for claim in try await ledger.openGooglePlayPendingClaims(since: since) {
            try Task.checkCancellation()
            report.pendingChecked += 1
            do {
                if case .recorded(.recorded) = try await recording.complete(purchaseToken: claim.purchaseToken) {
                    report.pendingRecorded += 1
                }
            } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                logger.notice(
                    "could not ask about a pending Google Play purchase",
                    metadata: ["uid": "\(claim.uid)", "error": "\(error)"])
            }
        }
    }

    /// Prices the purchases recorded without a price from their orders: `orders.batchget` per
    /// ``GooglePlayClient/ordersPerBatch``, and `orders.get` one by one when Google refuses a batch (it
    /// fails a whole batch for one order it does not find). A purchase not priced is noted
    /// (`price_lookups`) and asked again after its back-off; a batch Google did not answer is asked again
    /// next run, unnoted.
    ///
    /// - Throws: when the work list cannot be read (the database), or `CancellationError`.
    func syncPrices(into report: inout Report) async throws {
        let pricer = GooglePlayPricer(client: client, ledger: ledger, logger: logger, now: now)
        let unpriced = try await ledger.unpricedGooglePlayPurchases(limit: priceLimit, dueAt: now())
        for start in stride(from: 0, to: unpriced.count, by: GooglePlayClient.ordersPerBatch) {
            try Task.checkCancellation()
            let batch = Array(unpriced[start..<min(start + GooglePlayClient.ordersPerBatch, unpriced.count)])
            report.unpricedChecked += batch.count
            let orders: [String: PlayOrder]
            do {
                orders = try await self.orders(of: batch)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                report.pricesMissing += batch.count
                logger.warning("could not read Google Play orders to price purchases", metadata: ["error": "\(error)"])
                continue
            }
            for record in batch {
                let outcome: GooglePlayPricer.Outcome
                do {
                    if let orderId = record.orderId, let order = orders[orderId] {
                        outcome = try await pricer.book(order, for: record)
                    } else {
                        outcome = .notPriced("Google has no order \(record.orderId ?? "") for this package")
                    }
                } catch {
                    if error is CancellationError || Task.isCancelled { throw CancellationError() }
                    outcome = .notPriced("\(error)")
                }
                switch outcome {
                case .priced: report.pricesLearned += 1
                case .known: break
                case .notPriced(let why):
                    report.pricesMissing += 1
                    await noteNotPriced(record, why)
                }
            }
        }
    }

    /// The orders of `batch` by order id: one `orders.batchget`, or, when Google refuses it (an order it does
    /// not find fails the batch), `orders.get` for each (an order not found is then missing from the answer).
    private func orders(of batch: [GooglePlayToken]) async throws -> [String: PlayOrder] {
        let ids = batch.compactMap(\.orderId)
        guard !ids.isEmpty else { return [:] }
        do {
            return Dictionary(try await client.orders(ids).map { ($0.orderId, $0) }) { first, _ in first }
        } catch let error as GooglePlayError where error.code == .apiError && [400, 404].contains(error.httpStatus) {
            var orders: [String: PlayOrder] = [:]
            for id in ids {
                do {
                    orders[id] = try await client.order(id)
                } catch let error as GooglePlayError where error.code == .apiError && error.httpStatus == 404 {
                    continue
                }
            }
            return orders
        }
    }

    private func noteNotPriced(_ record: GooglePlayToken, _ why: String) async {
        let metadata: Logger.Metadata = ["transaction": "\(record.transactionId)", "why": "\(why)"]
        do {
            let next = try await ledger.recordPriceLookupFailure(
                UnpricedPurchase(
                    store: .googlePlay, environment: record.environment, transactionId: record.transactionId),
                outcome: why, at: now())
            logger.notice(
                "a Google Play purchase stays unpriced", metadata: metadata.merging(["until": "\(next)"]) { $1 })
        } catch {
            logger.warning("could not note a price lookup", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
    }
}

/// Runs ``GooglePlaySynchronizer`` every `interval` inside `serve` until graceful shutdown; each run
/// reads voids from shortly before the previous complete run's start, the first from `firstLookBack` ago.
package struct GooglePlaySyncService: Service {
    let synchronizer: GooglePlaySynchronizer
    let interval: Duration
    let firstLookBack: TimeInterval
    let logger: Logger

    package init(synchronizer: GooglePlaySynchronizer, interval: Duration, firstLookBack: TimeInterval, logger: Logger)
    {
        self.synchronizer = synchronizer
        self.interval = interval
        self.firstLookBack = firstLookBack
        self.logger = logger
    }

    static let overlap: TimeInterval = 15 * 60

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            var since = Date().addingTimeInterval(-firstLookBack)
            while !Task.isCancelled {
                let started = Date()
                do {
                    let report = try await synchronizer.sync(since: since)
                    logger.notice("Google Play sync", metadata: ["report": "\(report)"])
                    if report.voidsComplete { since = started.addingTimeInterval(-Self.overlap) }
                } catch is CancellationError {
                    break
                } catch {
                    logger.warning("Google Play sync failed; will try again", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
