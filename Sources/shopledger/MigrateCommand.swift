import ArgumentParser
import Foundation
import Ledger
import Postgres

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the schema migrations that are not applied yet (safe to run again).")

    @Flag(help: "List each migration and whether it is applied; change nothing.")
    var status = false

    @Flag(help: "With --status: print the list as JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    // Only the status has a JSON form: migrating prints one line for people, and its exit status says it all.
    func validate() throws {
        if json && !status { throw ValidationError("--json goes with --status.") }
    }

    func run() async throws {
        let logger = CommandLogging.logger()
        try await database.withClient(schema: .untouched, logger: logger) { client in
            let migrator = try LedgerSchema.migrator(logger: logger)
            if status && json {
                try JSONOutput.print(MigrationStatusJSON(try await migrator.status(client)))
            } else if status {
                for entry in try await migrator.status(client) {
                    let when = entry.appliedAt.map { " at \($0.formatted(.iso8601))" } ?? ""
                    print("\(entry.state == .applied ? "applied" : "pending")  \(entry.name)\(when)")
                }
            } else {
                let applied = try await migrator.migrate(client)
                print(
                    applied.isEmpty
                        ? "database is up to date (\(migrator.migrations.count) migrations applied)"
                        : "applied: \(applied.joined(separator: ", "))")
            }
        }
    }
}
