import AppStoreServerAPI
import Ledger
import Logging
import Receipts

/// Checks the whole notification path: asks Apple for a `TEST` notification, then polls Apple's status
/// and our notification inbox until the notification is stored there (it reached
/// `POST /api/v1/notifications/app-store` and verified) or time runs out.
public struct TestNotificationProbe: Sendable {
    public enum Outcome: Sendable, Hashable {
        /// The notification is in the inbox; Apple's delivery attempts so far.
        case stored(notificationUUID: String, attempts: [TestNotificationStatus.Attempt])
        /// Not in the inbox in time; Apple's last status, if it gave one.
        case notArrived(TestNotificationStatus?)
    }

    let api: AppStoreServerAPIClient
    let ledger: LedgerStore
    let pollInterval: Duration

    public init(api: AppStoreServerAPIClient, ledger: LedgerStore, pollInterval: Duration = .seconds(2)) {
        self.api = api
        self.ledger = ledger
        self.pollInterval = pollInterval
    }

    /// Requests the test notification and waits up to `timeout` for it to be stored.
    /// - Parameter requested: called with Apple's token once the request is accepted.
    public func run(timeout: Duration, requested: (String) -> Void = { _ in }) async throws -> Outcome {
        let token = try await api.requestTestNotification()
        requested(token)
        let deadline = ContinuousClock.now + timeout
        var status: TestNotificationStatus?
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: pollInterval)
            do {
                status = try await api.testNotificationStatus(token)
            } catch let error as AppStoreServerAPIError
                where error.apiErrorCode == AppStoreServerAPIError.APIErrorCode.testNotificationNotFound
            {
                continue  // Not sent yet.
            }
            if let status, try await ledger.isNotificationStored(status.notification.notificationUUID) {
                return .stored(notificationUUID: status.notification.notificationUUID, attempts: status.attempts)
            }
        }
        return .notArrived(status)
    }
}
