import Foundation
import GooglePlay
import Ledger
import Logging
import ServiceLifecycle

/// The Google Play side of a sync (`shopledger google sync`, and every `--google-play-sync-interval` in
/// `serve`): Google's voided purchases since a time, each recorded as its purchase's refund through the
/// same refund path as Apple's (so a missed push is recovered), and the acknowledgements still owed to
/// Google retried until its three-day deadline.
package struct GooglePlaySynchronizer: Sendable {
    let client: GooglePlayClient
    let ledger: LedgerStore
    let logger: Logger

    package init(client: GooglePlayClient, ledger: LedgerStore, logger: Logger = Logger(label: "shopledger.googleplay"))
    {
        self.client = client
        self.ledger = ledger
        self.logger = logger
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

        package var description: String {
            "voids \(voidsRead) (applied \(refundsApplied), parked \(refundsParked), known \(refundsKnown)"
                + (voidsComplete ? ")" : ", incomplete)")
                + ", acknowledged \(acknowledged), still owed \(acknowledgementsOwed)"
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
