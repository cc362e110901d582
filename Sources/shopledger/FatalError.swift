import ArgumentParser
import Foundation
import Logging
import Postgres

/// A service a command needs at start did not answer (Google's certificate URL for `serve`): exit
/// status 69, sysexits' EX_UNAVAILABLE. Not 64 (a usage error): nothing given is wrong, and the same
/// command may work once the service answers.
struct ServiceUnavailable: Error, CustomStringConvertible {
    static let exitStatus: Int32 = 69
    let description: String
}

/// The database's schema is one this build cannot run on (a newer migration that is not additive, or
/// an applied migration changed): exit status 78, sysexits' EX_CONFIG. Restarting the same binary
/// cannot help, so the shipped systemd unit lists 78 in `RestartPreventExitStatus=` rather than looping.
enum SchemaRefused {
    static let exitStatus: Int32 = 78
}

/// How an error that ends a command is written: as ArgumentParser writes it (`Error: …` and, for a bad
/// command line, the usage), or, when JSON logging was asked for, as one JSON log line at level
/// `critical` with the exit status, so that a log collector reading JSON lines also reads why the
/// start failed.
enum FatalError {
    /// The exit status for `error` and its message (nil when there is none to write: a command that
    /// printed its own verdict and threw `ExitCode(1)`).
    static func outcome(of error: any Error) -> (status: Int32, message: String?) {
        if let unavailable = error as? ServiceUnavailable {
            return (ServiceUnavailable.exitStatus, unavailable.description)
        }
        if let refused = error as? PostgresError, refused.code == .migration {
            return (SchemaRefused.exitStatus, ShopLedgerCommand.message(for: error))
        }
        let message = ShopLedgerCommand.message(for: error)
        return (ShopLedgerCommand.exitCode(for: error).rawValue, message.isEmpty ? nil : message)
    }

    /// Logs `error` on `logger` (level critical, `exit_status` beside) and returns the status to exit
    /// with; nil for what is no failure (`--help`, `--version`), which ArgumentParser prints as usual.
    static func log(_ error: any Error, to logger: Logger) -> Int32? {
        let (status, message) = outcome(of: error)
        guard status != 0 else { return nil }
        if let message { logger.critical("\(message)", metadata: ["exit_status": "\(status)"]) }
        return status
    }

    /// Writes `error` as `format` asks and exits.
    static func exit(with error: any Error, format: LogFormat) -> Never {
        if format == .json, let status = log(error, to: CommandLogging.logger()) {
            ShopLedgerCommand.exit(withError: ExitCode(status))
        }
        if let unavailable = error as? ServiceUnavailable {
            FileHandle.standardError.write(Data("Error: \(unavailable.description)\n".utf8))
            ShopLedgerCommand.exit(withError: ExitCode(ServiceUnavailable.exitStatus))
        }
        if let refused = error as? PostgresError, refused.code == .migration {
            FileHandle.standardError.write(Data("Error: \(ShopLedgerCommand.message(for: refused))\n".utf8))
            ShopLedgerCommand.exit(withError: ExitCode(SchemaRefused.exitStatus))
        }
        ShopLedgerCommand.exit(withError: error)
    }
}
