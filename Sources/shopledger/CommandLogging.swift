import ArgumentParser
import Foundation
import Logging

/// Logging set-up for the CLI: to standard error, level from `SHOPLEDGER_LOG_LEVEL` (default info), as
/// text or JSON lines (`--log-format`, `SHOPLEDGER_LOG_FORMAT`; default text).
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

    static let formatVariable = "SHOPLEDGER_LOG_FORMAT"

    /// The format `arguments` (`--log-format`, read before the command is parsed, since logging is set
    /// up first) or the environment ask for; text unless either says json. A `--log-format` value that is
    /// no format is left to the parser to refuse.
    static func format(arguments: [String]) throws -> LogFormat {
        var flag: String?
        var arguments = arguments.makeIterator()
        while let argument = arguments.next(), argument != "--" {
            if argument == "--log-format" {
                flag = arguments.next()
            } else if argument.hasPrefix("--log-format=") {
                flag = String(argument.dropFirst("--log-format=".count))
            }
        }
        if let format = flag.flatMap(LogFormat.init(rawValue:)) { return format }
        let choice = try Environment.choice(formatVariable, among: LogFormat.allCases.map(\.rawValue))
        return choice.flatMap(LogFormat.init(rawValue:)) ?? .text
    }

    /// Sets up logging from the environment and `--log-format`, and returns the format it set up; throws
    /// when the level or the format variable holds no level or format. A bad level still sets logging up
    /// (at info, in the format asked for), so that the error itself is written as a JSON line when JSON
    /// was asked for; a bad format leaves it as it is (text).
    @discardableResult
    static func bootstrap(arguments: [String] = Array(CommandLine.arguments.dropFirst())) throws -> LogFormat {
        let format = try format(arguments: arguments)
        let level: Logger.Level
        let warning: String?
        var levelError: (any Error)?
        do {
            (level, warning) = try self.level(in: ProcessInfo.processInfo.environment)
        } catch {
            (level, warning, levelError) = (.info, nil, error)
        }
        pinLocalTimeZone()
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
        if let levelError { throw levelError }
        if let warning { logger().warning("\(warning)") }
        return format
    }

    /// With `TZ` unset, glibc's `localtime` (which swift-log's text lines call for their timestamp)
    /// checks `/etc/localtime` with a `newfstatat` on every call: one system call per request log line,
    /// measured with `strace -c` on `serve` (500 myinfo requests: 500 newfstatat; with `TZ` set, none).
    /// `TZ=:/etc/localtime` names the same zone and is read once; a changed `/etc/localtime` is then
    /// seen at the next start. A `TZ` the operator set is left alone.
    static func pinLocalTimeZone() {
        if getenv("TZ") == nil { setenv("TZ", ":/etc/localtime", 0) }
    }

    static func logger(_ label: String = "shopledger") -> Logger {
        Logger(label: label)
    }
}

/// How log lines are written: `text` (swift-log's standard lines) or `json` (one object per line).
enum LogFormat: String, CaseIterable, ExpressibleByArgument {
    case text, json
}

/// `--log-format`, on every command that logs. `CommandLogging.bootstrap` reads it from the arguments
/// before they are parsed; declaring it here lets the parser accept it, refuse a bad value, and list it
/// in `--help`.
struct LoggingOptions: ParsableArguments {
    @Option(
        name: .customLong("log-format"),
        help:
            "Log lines as text, or as json (one object per line). Default: $SHOPLEDGER_LOG_FORMAT or text (the level: $SHOPLEDGER_LOG_LEVEL or info)"
    )
    var logFormat: LogFormat?
}
