import ArgumentParser
import BuildInfo
import Foundation
import Ledger
import Postgres

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the schema migrations that are not applied yet (safe to run again).")

    @Flag(
        help: """
            List each migration (applied, pending, or newer: applied by a newer build), whether it is additive, \
            when and by which release it was applied; change nothing. Fails after the list when this build \
            cannot run on the database.
            """)
    var status = false

    @Flag(help: "With --status: print the list as JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    // Only the status has a JSON form: migrating prints one line for people, and its exit status says it all.
    /// `applied  not additive  0016_webhooks.sql  at 2026-11-27T10:00:00Z by shopledger 0.9.0`
    static func line(_ entry: Migrator.Status) -> String {
        let state = entry.state.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0)
        let kind = (entry.isAdditive ? "additive" : "not additive").padding(toLength: 12, withPad: " ", startingAt: 0)
        let when = entry.appliedAt.map { " at \($0.formatted(.iso8601))" } ?? ""
        let by = entry.appliedBy.map { " by shopledger \($0)" } ?? ""
        return "\(state)  \(kind)  \(entry.name)\(when)\(by)"
    }

    func validate() throws {
        if json && !status { throw ValidationError("--json goes with --status.") }
    }

    func run() async throws {
        let logger = CommandLogging.logger()
        try await database.withClient(schema: .untouched, logger: logger) { client in
            let migrator = try LedgerSchema.migrator(release: BuildInfo.version, logger: logger)
            if status {
                // The list first, even when this build cannot run on the database; then the refusal, if any.
                let entries = try await migrator.report(client)
                if json {
                    try JSONOutput.print(MigrationStatusJSON(entries))
                } else {
                    for entry in entries { print(Self.line(entry)) }
                }
                _ = try await migrator.status(client)
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
