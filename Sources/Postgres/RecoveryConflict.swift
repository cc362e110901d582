import Logging

extension PostgresError {
    /// A hot standby cancelled the statement (or ended the session) because replaying the primary's
    /// changes needed what it held: "canceling statement due to conflict with recovery". The same
    /// read, run again, normally succeeds.
    public var isRecoveryConflict: Bool {
        message.contains("due to conflict with recovery")
            && (sqlState?.class == "40" || sqlState == .adminShutdown || sqlState == SQLState("57P04")
                || code == .connectionClosed)
    }
}

/// Runs a read-only `body` again when a hot standby cancelled it for a recovery conflict, at most
/// `attempts` times in all, waiting `delay` between tries. Only for work that writes nothing: it is
/// simply started over.
public func retryingRecoveryConflicts<R>(
    attempts: Int = 3, delay: Duration = .milliseconds(200), logger: Logger? = nil,
    _ body: () async throws -> R
) async throws -> R {
    var attempt = 1
    while true {
        do {
            return try await body()
        } catch let error as PostgresError where error.isRecoveryConflict && attempt < max(1, attempts) {
            attempt += 1
            logger?.notice(
                "a standby cancelled the read for a recovery conflict; reading again",
                metadata: ["attempt": "\(attempt)", "error": "\(error)"])
            try await Task.sleep(for: delay)
        }
    }
}
