import Dispatch
import Foundation
import Logging
import Synchronization

/// `serve`'s lines about stopping: one when SIGTERM or SIGINT arrives (which signal, and the grace it
/// now has), one when the server has stopped (why, and how long it took). ServiceGroup acts on the same
/// signals through dispatch sources of its own; every source of a signal is told when it arrives.
///
/// Not `Sendable`: made, started and stopped by `serve`'s one task; the handlers share only `received`.
final class ShutdownLog {
    private let logger: Logger
    private let grace: Duration
    private let onFirstSignal: @Sendable () -> Void
    private let received = Received()
    private var sources: [any DispatchSourceSignal] = []

    /// - Parameter onFirstSignal: called after the line about the first signal (`serve` tells systemd).
    init(logger: Logger, grace: Duration, onFirstSignal: @escaping @Sendable () -> Void = {}) {
        self.logger = logger
        self.grace = grace
        self.onFirstSignal = onFirstSignal
    }

    /// Starts listening for SIGTERM and SIGINT (their default action, ending the process, is left to
    /// ServiceGroup to replace; it does so before the server starts).
    func start() {
        for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            let (logger, grace, received, onFirstSignal) = (self.logger, self.grace, self.received, self.onFirstSignal)
            source.setEventHandler {
                let first = received.state.withLock { state -> Bool in
                    guard state == nil else { return false }
                    state = (name, .now)
                    return true
                }
                guard first else { return }
                logger.notice(
                    "shopledger shutting down",
                    metadata: ["signal": "\(name)", "grace_s": "\(Self.seconds(grace))"])
                onFirstSignal()
            }
            source.resume()
            sources.append(source)
        }
    }

    /// The line once the server has stopped: `reason` is the signal when one came, else `ended` (the
    /// server's services ended by themselves) or the error that ended them.
    func stopped(error: (any Error)? = nil) {
        for source in sources { source.cancel() }
        sources = []
        let signal = received.state.withLock { $0 }
        var metadata: Logger.Metadata = [:]
        if let signal {
            metadata["reason"] = "\(signal.signal)"
            metadata["after_s"] = "\(Self.seconds(ContinuousClock.now - signal.at))"
        } else {
            metadata["reason"] = error == nil ? "ended" : "failed"
        }
        if let error { metadata["error"] = "\(error)" }
        logger.notice("shopledger stopped", metadata: metadata)
    }

    /// The first signal and when it came, shared with the dispatch sources' handlers.
    private final class Received: Sendable {
        let state = Mutex<(signal: String, at: ContinuousClock.Instant)?>(nil)
    }

    /// Seconds with millisecond precision, as text: "10", "0.25".
    private static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return SettingValue.number(Double(milliseconds) / 1000)
    }
}
