import Foundation
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

/// `shopledger admin grant|revoke|lookup|history` as an operator runs them: the built binary on a
/// real database.
@Suite("Support actions on the command line: shopledger admin")
struct SupportCommandTests {
    @Test("grant, lookup, history, revoke, and a refusal without a reason")
    func commands() async throws {
        try await withTestDatabase { db in
            let ledger = LedgerStore(client: db.client)
            _ = try await ledger.register(uid: "hana", profile: try UserProfile(json: #"{"nick":"새싹"}"#))
            let database = ["--database-url", db.url]
            let who = ["--actor", "support-park", "--reason", "charged twice"]

            let granted = try await ShopLedgerRun.run(["admin", "grant", "hana", "face", "4"] + who + database)
            #expect(granted.status == 0, "\(granted.output)")
            #expect(granted.output.contains("grant #") && granted.output.contains("by support-park"))
            #expect(try await ledger.inventory(of: "hana").faces == [0, 4])

            let noReason = try await ShopLedgerRun.run(
                ["admin", "grant", "hana", "face", "5", "--actor", "x", "--reason", " "] + database)
            #expect(noReason.status != 0 && noReason.output.contains("a reason is required"))

            let action = try #require(try await ledger.supportActions(of: "hana").first)
            let history = try await ShopLedgerRun.run(["admin", "history", "hana"] + database)
            #expect(history.status == 0 && history.output.contains("charged twice"), "\(history.output)")

            let revoked = try await ShopLedgerRun.run(
                ["admin", "revoke", String(action.actionId), "--actor", "support-park", "--reason", "undo"] + database)
            #expect(revoked.status == 0 && revoked.output.contains("revokes #\(action.actionId)"), "\(revoked.output)")
            #expect(try await ledger.inventory(of: "hana").faces == [0])

            let missing = try await ShopLedgerRun.run(["admin", "lookup", "no-such-transaction"] + database)
            #expect(missing.status == 1 && missing.output.contains("no purchase has"))
            #expect(try await Reconciler(client: db.client).run().passed)
        }
    }
}
