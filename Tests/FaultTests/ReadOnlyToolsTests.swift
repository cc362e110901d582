import Foundation
import Postgres
import Testing

/// `report` and `reconcile` only read: they must work on a read-only connection (a hot standby) and
/// never migrate; `serve` migrates, and an older build refuses a newer schema unless its newer
/// migrations are additive.
@Suite("Read-only tools and schema versions, with the real binary")
struct ReadOnlyToolsTests {
    static func run(_ arguments: [String]) async throws -> (passed: Bool, output: String) {
        let (status, output) = try await runStatus(arguments)
        return (status == .exited(0), output)
    }

    static func runStatus(_ arguments: [String]) async throws -> (status: Spawned.Termination, output: String) {
        try await Spawned.run([try ServerProcess.binary()] + arguments, timeout: .seconds(120))
    }

    @Test(
        "report and reconcile never migrate and work with default_transaction_read_only=on; serve refuses a newer schema that is not additive",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(3)))
    func readOnlyTools() async throws {
        try await FaultScenario.run("read-only") { scenario in
            let url = scenario.cluster.url
            let readOnly = url + "&options=-cdefault_transaction_read_only%3Don"
            let out = scenario.folder + "/reports"

            // On a database never migrated, the read tools refuse and create nothing.
            let early = try await Self.run(["reconcile", "--database-url", url])
            #expect(!early.passed && early.output.contains("shopledger migrate"), "\(early.output)")
            let created = try await scenario.cluster.withClient {
                try await $0.query("SELECT to_regclass('schema_migrations') IS NOT NULL").single().decode(
                    Bool.self, at: 0)
            }
            #expect(!created, "reconcile created schema_migrations")

            let migrated = try await Self.run(["migrate", "--database-url", url])
            #expect(migrated.passed, "\(migrated.output)")
            let reconciled = try await Self.run(["reconcile", "--database-url", readOnly])
            #expect(reconciled.passed, "reconcile on a read-only connection: \(reconciled.output)")
            let report = try await Self.run([
                "report", "daily", "--date", "2026-01-05", "--out", out, "--database-url", readOnly,
            ])
            #expect(report.passed, "report on a read-only connection: \(report.output)")

            // A newer build applied an additive migration: this one still serves.
            try await scenario.cluster.withClient {
                try await $0.query(
                    "INSERT INTO schema_migrations (version, name, checksum, additive) VALUES (9001, '9001_newer_index.sql', 'x', true)"
                )
            }
            let server = try await scenario.startServer()
            server.kill()
            // ... then one that is not additive: serve refuses with a message that says so and names the
            // release that applied it.
            try await scenario.cluster.withClient {
                try await $0.query(
                    """
                    INSERT INTO schema_migrations (version, name, checksum, additive, release)
                    VALUES (9002, '9002_newer_rename.sql', 'x', false, '9.9.0')
                    """
                )
            }
            // Exit 78 (EX_CONFIG), which the shipped unit does not restart.
            let refused = try await Self.runStatus(["serve", "--database-url", url, "--port", "0", "--dev-auth"])
            #expect(refused.status == .exited(78), "\(refused.status)")
            #expect(
                refused.output.contains("9002_newer_rename.sql")
                    && refused.output.contains("not additive")
                    && refused.output.contains("run shopledger 9.9.0 or newer"), "\(refused.output)")
        }
    }
}
