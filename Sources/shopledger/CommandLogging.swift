import ArgumentParser
import Foundation
import Logging

/// Logging set-up for the CLI: to standard error, level from `SHOPLEDGER_LOG_LEVEL` (default info).
///
/// `LOG_LEVEL`, the name before every variable took the `SHOPLEDGER_` prefix, is still read (with a
/// deprecation warning) so existing deployments keep their level; a value that is no level stops the
/// start naming the variable, as a bad `SHOPLEDGER_PORT` does, rather than logging at a level nobody chose.
enum CommandLogging {
    static let variable = "SHOPLEDGER_LOG_LEVEL"
    static let deprecatedVariable = "LOG_LEVEL"

    /// The level the environment asks for, and the deprecation warning to log once logging is set up.
    static func level(in environment: [String: String]) throws -> (level: Logger.Level, warning: String?) {
        let current = environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        let deprecated = environment[deprecatedVariable].flatMap { $0.isEmpty ? nil : $0 }
        if let current {
            let warning = deprecated.map { _ in
                "\(deprecatedVariable) is deprecated and ignored: \(variable) is set (remove \(deprecatedVariable))"
            }
            return (try parse(current, from: variable), warning)
        }
        if let deprecated {
            return (
                try parse(deprecated, from: deprecatedVariable),
                "\(deprecatedVariable) is deprecated: set \(variable) instead"
            )
        }
        return (.info, nil)
    }

    private static func parse(_ text: String, from name: String) throws -> Logger.Level {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard let level = Logger.Level(rawValue: trimmed) else {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("\(name) must be one of \(levels), got \(text.prefix(40).debugDescription)")
        }
        return level
    }

    /// Sets up logging from the environment; throws when the level variable holds no level.
    static func bootstrap() throws {
        let (level, warning) = try level(in: ProcessInfo.processInfo.environment)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        if let warning { logger().warning("\(warning)") }
    }

    static func logger(_ label: String = "shopledger") -> Logger {
        Logger(label: label)
    }
}
