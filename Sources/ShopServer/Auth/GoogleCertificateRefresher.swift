import Logging
import ServiceLifecycle
import UnixSignals

/// Keeps a ``GoogleCertificateStore`` made from Google's URL fresh, the way an HTTP cache would: the
/// document is fetched again when the `Cache-Control: max-age` of the last answer runs out (Google's
/// is a few hours, and it publishes the next key well before signing with it), never sooner than
/// `minimumInterval` after the last fetch, and at once on SIGHUP. A failed fetch keeps the keys in
/// use, says why in the log and is tried again after `minimumInterval`, doubling up to ten minutes.
struct GoogleCertificateRefresher: Service {
    static let longestInterval = Duration.seconds(24 * 3600)
    static let defaultFreshness = Duration.seconds(3600)
    static let longestRetry = Duration.seconds(600)

    let store: GoogleCertificateStore
    let fetcher: GoogleCertificateFetcher
    let minimumInterval: Duration
    let logger: Logger
    /// Counts fetches (`/metrics`); the fetch at start is counted by the application it starts.
    var metrics: ShopMetrics?
    /// What the pauses between fetches are measured on (tests move a clock of their own).
    var clock: any Clock<Duration> = ContinuousClock()

    /// When to fetch again after an answer fresh for `freshness`: its whole lifetime, bounded.
    static func nextFetch(after freshness: Duration?, minimumInterval: Duration) -> Duration {
        min(max(freshness ?? defaultFreshness, minimumInterval), max(longestInterval, minimumInterval))
    }

    /// The pause after `failures` failed fetches in a row (1, 2, …).
    static func retry(afterFailures failures: Int, minimumInterval: Duration) -> Duration {
        var pause = minimumInterval
        for _ in 1..<max(1, min(failures, 20)) where pause < longestRetry { pause = pause * 2 }
        return min(pause, max(longestRetry, minimumInterval))
    }

    func run() async throws {
        guard store.url != nil else { return }
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        logger.info(
            "refreshing Google's certificates from their URL",
            metadata: ["url": "\(fetcher.url)", "minimum_interval": "\(minimumInterval)"])
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await refreshPeriodically() }
                group.addTask {
                    for await _ in hangups { _ = await refresh(because: "SIGHUP") }
                }
            }
        }
    }

    private func refreshPeriodically() async {
        var wait = Self.nextFetch(after: store.initialFreshness, minimumInterval: minimumInterval)
        var failures = 0
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: wait)
            } catch {
                return
            }
            if let freshness = await refresh(because: "the last answer is no longer fresh") {
                failures = 0
                wait = Self.nextFetch(after: freshness, minimumInterval: minimumInterval)
            } else {
                failures += 1
                wait = Self.retry(afterFailures: failures, minimumInterval: minimumInterval)
            }
        }
    }

    /// Fetches once and swaps the keys in. Returns how long the answer stays fresh (the default when it
    /// did not say), or nil when the fetch failed and the keys in use were kept.
    private func refresh(because reason: String) async -> Duration? {
        do {
            let fetched = try await fetcher.fetch()
            metrics?.recordGoogleCertificateFetch(ok: true)
            let before = store.certificates.keyIDs
            store.replace(with: fetched.certificates)
            let after = fetched.certificates.keyIDs
            logger.log(
                level: before == after ? .info : .notice,
                before == after
                    ? "fetched Google's certificates: the same keys" : "fetched Google's certificates: new keys",
                metadata: [
                    "reason": "\(reason)", "keys": "\(after.joined(separator: ","))",
                    "fresh_for": "\(fetched.freshFor.map { "\($0)" } ?? "unknown")",
                ])
            return fetched.freshFor ?? Self.defaultFreshness
        } catch {
            metrics?.recordGoogleCertificateFetch(ok: false)
            logger.warning(
                "cannot fetch Google's certificates; keeping the keys in use",
                metadata: ["reason": "\(reason)", "error": "\(error.description)"])
            return nil
        }
    }
}
