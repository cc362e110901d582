import ArgumentParser
import Foundation
import Ledger
import Postgres

/// `shopledger backups`: the backups pgBackRest took of the shop's database, as the `backups` table
/// records them (migration 0019). pgBackRest takes and restores them; ShopLedger only records that a
/// good one exists, so every server can export how old it is (`shop_backup_last_success_timestamp_seconds`).
struct BackupsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backups",
        abstract: "Record the backups pgBackRest took (after each backup), or list those recorded.",
        subcommands: [BackupsRecordCommand.self, BackupsListCommand.self])
}

/// `shopledger backups record`: runs `pgbackrest info --output=json` and records each good backup of
/// this database not recorded yet. The backup job (deploy/pgbackrest/shopledger-backup@.service) runs it,
/// as the `postgres` user, after `pgbackrest backup` succeeded.
struct BackupsRecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record the good backups `pgbackrest info` lists of this database (each once).",
        discussion: """
            Runs `pgbackrest [--config=FILE] --stanza=NAME info --output=json` and adds to the database's \
            `backups` table each backup it lists that was taken of this database (the same system-id as \
            pg_control_system()) and in which pgBackRest found no error. Run it after every backup, as the \
            user that runs pgBackRest: every `shopledger serve` exports when the newest recorded backup ended \
            as shop_backup_last_success_timestamp_seconds.

            Exit status: 0 when the stanza lists at least one good backup of this database (recorded now or \
            before); 1 when it lists none, or pgbackrest fails.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    @Option(help: "The pgBackRest stanza of the shop's cluster.")
    var stanza = "shopledger"

    @Option(
        name: .customLong("pgbackrest"),
        help: ArgumentHelp("The pgbackrest program (a path, or a name looked up in PATH).", valueName: "path"))
    var program = "pgbackrest"

    @Option(
        name: .customLong("pgbackrest-config"),
        help: ArgumentHelp(
            "pgBackRest's configuration file. Default: pgBackRest's own (/etc/pgbackrest/pgbackrest.conf).",
            valueName: "file"))
    var configFile: String?

    func run() async throws {
        var arguments = configFile.map { ["--config=\($0)"] } ?? []
        arguments += ["--stanza=\(stanza)", "--output=json", "info"]
        let json = try PgBackRestProgram(program).run(arguments)
        let info = try PgBackRestInfo(json: json, stanza: stanza)
        let outcome = try await database.withClient(schema: .requireCurrent) { client in
            try await BackupLog(client: client).record(info)
        }
        for backup in outcome.recorded {
            print(
                "recorded \(backup.label) (\(backup.kind.rawValue), ended \(backup.stoppedAt.formatted(.iso8601)), "
                    + "\(backup.databaseBytes) bytes of database, \(backup.repositoryBytes) in the repository)")
        }
        for (label, why) in outcome.skipped { print("not recorded \(label): \(why)") }
        print("\(outcome.recorded.count) recorded now, \(outcome.alreadyRecorded) recorded before")
    }
}

/// `shopledger backups list`: the newest recorded backups.
struct BackupsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the newest recorded backups, newest first.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    @Option(help: "How many to list.")
    var limit = 10

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be at least 1.") }
    }

    func run() async throws {
        let limit = limit
        let backups = try await database.withClient(schema: .requireCurrent) { client in
            try await BackupLog(client: client).newest(limit: limit)
        }
        guard let newest = backups.first else {
            print("no backup recorded (shopledger backups record runs after each pgbackrest backup)")
            return
        }
        let age = Int(Date().timeIntervalSince(newest.stoppedAt) / 3600)
        print("newest backup ended \(newest.stoppedAt.formatted(.iso8601)), \(age) h ago")
        for backup in backups {
            print(
                "\(backup.label)  \(backup.kind.rawValue)  \(backup.startedAt.formatted(.iso8601)) .. "
                    + "\(backup.stoppedAt.formatted(.iso8601))  \(backup.databaseBytes) B  wal \(backup.walStart)..\(backup.walStop)"
            )
        }
    }
}
