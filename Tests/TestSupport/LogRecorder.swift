import Logging
import Synchronization

/// Collects what a logger is given (level, message, metadata), for assertions about what the server says.
public final class LogRecorder: Sendable {
    public struct Entry: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: [String: String]

        /// The message, then its metadata as sorted `key=value` pairs.
        public var line: String {
            ([message] + metadata.map { "\($0.key)=\($0.value)" }.sorted()).joined(separator: " ")
        }
    }

    private let recorded = Mutex<[Entry]>([])

    public init() {}

    public var entries: [Entry] { recorded.withLock { $0 } }
    /// Each entry as its ``Entry/line``.
    public var messages: [String] { entries.map(\.line) }

    /// A logger at `info` whose every entry lands here.
    public var logger: Logger {
        var logger = Logger(label: "test-recorded") { _ in Handler(recorder: self) }
        logger.logLevel = .info
        return logger
    }

    /// Waits (polling, at most `within`) until a line contains `text`.
    public func waitFor(_ text: String, within: Duration) async -> Bool {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            if messages.contains(where: { $0.contains(text) }) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    fileprivate func append(_ entry: Entry) { recorded.withLock { $0.append(entry) } }

    struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            recorder.append(
                Entry(level: event.level, message: event.message.description, metadata: all.mapValues { "\($0)" }))
        }
    }
}
