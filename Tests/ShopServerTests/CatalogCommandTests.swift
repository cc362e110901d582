import Foundation
import HTTPTypes
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

/// `shopledger catalog add|rename|retire|list` as an operator runs them: the built binary on the
/// database of a server that is running, which sells the new item without a restart.
@Suite("The catalog on the command line: shopledger catalog")
struct CatalogCommandTests {
    @Test("add while the server runs (then sold), list, rename, retire (then refused), and refusals")
    func commands() async throws {
        try await withShopServer { client, db in
            try await client.signUp("hana")
            let database = ["--database-url", db.url]
            let who = ["--actor", "ops-park", "--reason", "the winter collection"]
            let item = ["--kind", "background", "--index", "8"]
            let product = "com.memolease.sesac1.background8"

            let added = try await ShopLedgerRun.run(
                ["catalog", "add"] + item + [
                    "--product-id", product, "--name-ko", "눈 내린 마을", "--name-en", "Snowy village", "--price",
                    "2500", "--currency", "KRW", "--description-ko", "눈이 소복이 쌓인 마을입니다",
                ] + who + database)
            #expect(added.status == 0, "\(added.output)")
            #expect(added.output.contains("add #") && added.output.contains("by ops-park"), "\(added.output)")
            let stored = try await db.client.query(
                "SELECT price_milli, currency, name_en FROM catalog_items WHERE kind = 'background' AND item_index = 8"
            ).single().decode((Int64, String, String?).self)
            #expect(stored.0 == 2_500_000 && stored.1 == "KRW" && stored.2 == "Snowy village")

            // The running server sells it: no restart.
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "hana",
                json: ["receipt": ServerTest.stubReceipt(product, transaction: "cli-1", price: 2_500_000)])
            #expect(bought.status == .ok || bought.status == .created, "\(bought.body)")
            let me = try await client.api(.get, "/api/v1/me", uid: "hana")
            #expect(((me.json["owned"] as? [String: Any])?["backgrounds"] as? [Int]) == [0, 8], "\(me.body)")

            let listed = try await ShopLedgerRun.run(["catalog", "list", "--json"] + database, separatingErrors: true)
            #expect(listed.status == 0, "\(listed.errors)")
            let items = try #require(
                (try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any])?["items"]
                    as? [[String: Any]])
            #expect(items.count == 14)
            let eight = try #require(items.first { $0["kind"] as? String == "background" && $0["index"] as? Int == 8 })
            let price = try #require(eight["price"] as? [String: Any])
            #expect(price["amountMilli"] as? Int == 2_500_000 && price["currency"] as? String == "KRW")
            #expect(eight["nameEn"] as? String == "Snowy village" && eight["retired"] as? Bool == false)
            #expect(eight["retiredAt"] is NSNull && items.first?["productId"] is NSNull)

            let renamed = try await ShopLedgerRun.run(
                ["catalog", "rename"] + item + ["--name-en", "Snow village"] + who + database)
            #expect(renamed.status == 0 && renamed.output.contains("was 눈 내린 마을 / Snowy village"), "\(renamed.output)")

            let retired = try await ShopLedgerRun.run(["catalog", "retire"] + item + who + database)
            #expect(retired.status == 0 && retired.output.contains("retire #"), "\(retired.output)")
            let refused = try await client.api(
                .post, "/api/v1/purchases", uid: "hana",
                json: [
                    "receipt": CatalogAdminRouteTests.receipt(
                        product, transaction: "cli-2", at: Date().addingTimeInterval(60))
                ])
            #expect(
                refused.status == .unprocessableContent && refused.errorCode == "product_retired", "\(refused.body)")
            let text = try await ShopLedgerRun.run(["catalog", "list"] + database)
            #expect(text.status == 0 && text.output.contains("background 8 \(product) 눈 내린 마을 / Snow village"))
            #expect(text.output.contains("[retired "), "\(text.output)")

            // Refusals: a clear message, a failing exit status, nothing written.
            let before = try await db.client.query("SELECT count(*) FROM catalog_changes").single().decode(
                Int.self, at: 0)
            let refusals: [([String], String)] = [
                (["catalog", "retire"] + item + who, "retired already"),
                (["catalog", "retire", "--kind", "face", "--index", "0"] + who, "index 0"),
                (
                    ["catalog", "rename", "--kind", "face", "--index", "1", "--actor", "x", "--reason", " "],
                    "a reason is required"
                ),
                (["catalog", "rename", "--kind", "hat", "--index", "1", "--name-ko", "x"] + who, "face or background"),
                (
                    [
                        "catalog", "add", "--kind", "face", "--index", "6", "--product-id", "p.six", "--name-ko", "육",
                        "--name-en", "Six", "--price", "2,500", "--currency", "KRW",
                    ] + who, "decimal amount"
                ),
                (
                    [
                        "catalog", "add", "--kind", "face", "--index", "6", "--product-id", product, "--name-ko", "육",
                        "--name-en", "Six", "--price", "2500", "--currency", "KRW",
                    ] + who, "is taken"
                ),
            ]
            for (arguments, message) in refusals {
                let run = try await ShopLedgerRun.run(arguments + database)
                #expect(run.status != 0 && run.output.contains(message), "\(arguments): \(run.output)")
            }
            #expect(
                try await db.client.query("SELECT count(*) FROM catalog_changes").single().decode(Int.self, at: 0)
                    == before)
            #expect(try await Reconciler(client: db.client).run().passed)
        }
    }
}
