import Console
import Foundation
import Postgres
import TestSupport
import Testing

/// `shopledger operators` as an operator runs it: the built binary on a test database.
@Suite struct OperatorsCommandTests {
    /// A password file private to its owner, as the command requires.
    static func passwordFile(_ text: String, mode: Int = 0o600) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("operator-\(UUID().uuidString)").path
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode])
        return path
    }

    @Test func addListDisableAndResetPassword() async throws {
        try await withTestDatabase { db in
            let database = ["--database-url", db.url]
            let file = try Self.passwordFile("a long enough password\n")
            defer { try? FileManager.default.removeItem(atPath: file) }

            let added = try await ShopLedgerRun.run(
                ["operators", "add", "park.jiwoo", "--role", "finance", "--password-file", file] + database)
            #expect(added.status == 0, "\(added.output)")
            #expect(added.output.contains("added operator park.jiwoo (finance)"))
            let stored = try await db.client.query(
                "SELECT role, password_hash FROM console_operators WHERE name = 'park.jiwoo'"
            ).single().decode((String, String).self)
            #expect(stored.0 == "finance")
            #expect(stored.1.hasPrefix("scrypt$15$8$1$") && !stored.1.contains("a long enough password"))
            let hash = try #require(PasswordHash(stored: stored.1))
            #expect(hash.matches("a long enough password"), "the file's line break is not part of it")

            let again = try await ShopLedgerRun.run(
                ["operators", "add", "park.jiwoo", "--role", "admin", "--password-file", file] + database)
            #expect(again.status == 1 && again.output.contains("exists already"), "\(again.output)")

            let listed = try await ShopLedgerRun.run(["operators", "list"] + database)
            #expect(listed.status == 0 && listed.output.contains("park.jiwoo\tfinance\tactive"), "\(listed.output)")

            let disabled = try await ShopLedgerRun.run(["operators", "disable", "park.jiwoo"] + database)
            #expect(disabled.status == 0, "\(disabled.output)")
            #expect(try await ShopLedgerRun.run(["operators", "list"] + database).output.contains("\tdisabled "))

            let newFile = try Self.passwordFile("another long password")
            defer { try? FileManager.default.removeItem(atPath: newFile) }
            let reset = try await ShopLedgerRun.run(
                ["operators", "reset-password", "park.jiwoo", "--password-file", newFile] + database)
            #expect(reset.status == 0, "\(reset.output)")
            let after = try await db.client.query(
                "SELECT password_hash, disabled_at IS NULL FROM console_operators WHERE name = 'park.jiwoo'"
            ).single().decode((String, Bool).self)
            #expect(PasswordHash(stored: after.0)?.matches("another long password") == true)
            #expect(after.1, "a reset enables the operator again")
        }
    }

    @Test func refusesAWeakPasswordABadNameAndAFileOthersCanRead() async throws {
        try await withTestDatabase { db in
            let database = ["--database-url", db.url]
            let short = try Self.passwordFile("short")
            let shared = try Self.passwordFile("a long enough password", mode: 0o644)
            let good = try Self.passwordFile("a long enough password")
            defer { for file in [short, shared, good] { try? FileManager.default.removeItem(atPath: file) } }
            for (arguments, expected) in [
                (["operators", "add", "mina", "--role", "support", "--password-file", short], "at least 12"),
                (["operators", "add", "mina", "--role", "support", "--password-file", shared], "chmod 600"),
                (["operators", "add", "Mina!", "--role", "support", "--password-file", good], "operator name"),
                (["operators", "add", "mina", "--role", "owner", "--password-file", good], "--role"),
            ] {
                let refused = try await ShopLedgerRun.run(arguments + database)
                #expect(refused.status != 0, "\(arguments)")
                #expect(refused.output.contains(expected), "\(refused.output)")
            }
            let count = try await db.client.query("SELECT count(*) FROM console_operators").single()
                .decode(Int64.self, at: 0)
            #expect(count == 0)
        }
    }
}
