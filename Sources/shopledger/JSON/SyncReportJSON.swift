import APIViews
import AppStoreServerAPI
import Foundation
import Receipts
import Shop

/// `appstore sync --json`: the `AppStoreSynchronizer.Report`, its counts and lists, with snake_case keys.
/// Defined here, not on the report, so the JSON shape stays the CLI's contract wherever that type lives.
struct SyncReportJSON: Encodable {
    struct Failure: Encodable {
        let step: String
        @NullWhenNil var environment: String?
        @NullWhenNil var subject: String?
        let reason: String
    }

    struct Attempt: Encodable {
        let result: String
        @NullWhenNil var date: Date?
    }

    struct Stored: Encodable {
        let uuid: String
        let type: String
        let environment: String
        @NullWhenNil var lastAttempt: Attempt?
        enum CodingKeys: String, CodingKey {
            case uuid, type, environment, lastAttempt = "last_attempt"
        }
    }

    let notificationsSeen: Int
    let notificationsStored: Int
    let notificationEventsApplied: Int
    let customersChecked: Int
    let refundsSeen: Int
    let refundsApplied: Int
    let unpricedChecked: Int
    let pricesLearned: Int
    let failures: Int
    let failed: [Failure]
    let notificationHistoryIncomplete: [String]
    let warnings: [String]
    let storedNotifications: [Stored]
    let lastAttemptResults: [String: Int]

    enum CodingKeys: String, CodingKey {
        case notificationsSeen = "notifications_seen", notificationsStored = "notifications_stored"
        case notificationEventsApplied = "notification_events_applied", customersChecked = "customers_checked"
        case refundsSeen = "refunds_seen", refundsApplied = "refunds_applied", unpricedChecked = "unpriced_checked"
        case pricesLearned = "prices_learned", failures, failed
        case notificationHistoryIncomplete = "notification_history_incomplete", warnings
        case storedNotifications = "stored_notifications", lastAttemptResults = "last_attempt_results"
    }

    init(_ report: AppStoreSynchronizer.Report) {
        notificationsSeen = report.notificationsSeen
        notificationsStored = report.notificationsStored
        notificationEventsApplied = report.notificationEventsApplied
        customersChecked = report.customersChecked
        refundsSeen = report.refundsSeen
        refundsApplied = report.refundsApplied
        unpricedChecked = report.unpricedChecked
        pricesLearned = report.pricesLearned
        failures = report.failures
        failed = report.failed.map {
            Failure(
                step: $0.step.rawValue, environment: $0.environment?.rawValue, subject: $0.subject, reason: $0.reason)
        }
        notificationHistoryIncomplete = report.notificationHistoryIncomplete.map(\.rawValue).sorted()
        warnings = report.warnings
        storedNotifications = report.storedNotifications.map {
            Stored(
                uuid: $0.uuid, type: $0.type, environment: $0.environment.rawValue,
                lastAttempt: $0.lastAttempt.map { Attempt(result: $0.result, date: $0.date) })
        }
        lastAttemptResults = report.lastAttemptResults
    }
}
