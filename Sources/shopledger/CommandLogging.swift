import Foundation
import Logging

/// Logging set-up for the CLI: to standard error, level from LOG_LEVEL (default info).
enum CommandLogging {
    static func bootstrap() {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel =
                ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
            return handler
        }
    }

    static func logger(_ label: String = "shopledger") -> Logger {
        Logger(label: label)
    }
}
