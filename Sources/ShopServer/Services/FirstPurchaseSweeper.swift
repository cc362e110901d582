import Ledger
import Logging
import ServiceLifecycle

/// Keeps `first_purchases` caught up with the purchases recorded while serving, and deletes the
/// cached report days entries recorded since change (the reports read the rest from the ledger, so
/// the longer between runs, the more each report reads): at start,
/// then every `interval`, until graceful shutdown. Several servers may run it; one at a time writes.
struct FirstPurchaseSweeper: Service {
    let catchUp: FirstPurchaseCatchUp
    let interval: Duration

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await catchUp.runLogged()
                try? await Task.sleep(for: interval)
            }
        }
    }
}
