import CivilDates
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import Reports
import TestSupport
import Testing

@testable import ShopServer

/// The catalog as data (issue 29): an item added while the server runs is sold, owned, shown and
/// reported without a restart; a retired one is refused for sale and still owned.
@Suite("Catalog administration over HTTP")
struct CatalogAdminRouteTests {
    static let admin = ServerTest.adminToken
    static let rainbow = "com.memolease.sesac1.sprout5"
    static var addBody: [String: Any] {
        [
            "kind": "face", "index": 5, "productId": rainbow, "name": "무지개 새싹", "nameEn": "Rainbow sprout",
            "description": "일곱 빛깔 새싹입니다.", "price": ["amountMilli": 3_000_000, "currency": "KRW"],
            "reason": "the winter collection",
        ]
    }

    /// A signed stub receipt of one purchase of `product` made at `date`.
    static func receipt(_ product: String, transaction: String, at date: Date) -> String {
        let ms = Int64(date.timeIntervalSince1970 * 1000)
        return StubReceipt(
            bundleId: ServerTest.bundleId, creationDateMs: ms + 500,
            inApp: [
                .init(
                    productId: product, transactionId: transaction, purchaseDateMs: ms, priceMilli: 3_000_000,
                    currency: "KRW")
            ]
        ).text(signedWith: ServerTest.stubSecret)
    }

    static func catalogItem(
        _ client: any TestClientProtocol, _ kind: String, _ index: Int
    ) async throws -> [String:
        Any]?
    {
        let catalog = try await client.api(.get, "/api/v1/catalog")
        #expect(catalog.status == .ok)
        return (catalog.json["items"] as? [[String: Any]])?.first {
            $0["kind"] as? String == kind && $0["index"] as? Int == index
        }
    }

    @Test("added while running: sold, owned, shown and reported; retired: refused for sale, still owned")
    func addSellRetire() async throws {
        try await withShopServer(configure: { $0.auth.adminLabel = "ops-kim" }) { client, db in
            try await client.signUp("alice")
            try await client.signUp("bob")
            // The catalog as clients see it before: the seeded items, every existing key, nothing retired.
            let seeded = try #require(try await Self.catalogItem(client, "face", 1))
            #expect(
                Set(seeded.keys)
                    == [
                        "kind", "index", "productId", "googleProductId", "name", "description", "price", "nameEn",
                        "retired", "retiredAt",
                    ])
            #expect(seeded["nameEn"] is NSNull && seeded["retired"] as? Bool == false && seeded["retiredAt"] is NSNull)
            #expect(seeded["googleProductId"] is NSNull)
            #expect(try await Self.catalogItem(client, "face", 5) == nil)
            #expect(
                try await client.api(
                    .post, "/api/v1/purchases", uid: "alice",
                    json: [
                        "receipt": Self.receipt(Self.rainbow, transaction: "early", at: Date())
                    ]
                ).errorCode == "unknown_product")

            // Added: 201 with who and why.
            let added = try await client.api(.post, "/api/v1/admin/catalog", token: Self.admin, json: Self.addBody)
            #expect(added.status == .created, "\(added.body)")
            #expect(added.json["actor"] as? String == "ops-kim" && added.json["change"] as? String == "add")
            #expect(added.json["reason"] as? String == "the winter collection")

            // Shown.
            let shown = try #require(try await Self.catalogItem(client, "face", 5))
            #expect(shown["productId"] as? String == Self.rainbow && shown["name"] as? String == "무지개 새싹")
            #expect(shown["nameEn"] as? String == "Rainbow sprout" && shown["retired"] as? Bool == false)
            #expect((shown["price"] as? [String: Any])?["amountMilli"] as? Int == 3_000_000)

            // Sold and owned: both surfaces' user documents show it.
            let bought = try await client.api(
                .post, "/api/v1/purchases", uid: "alice",
                json: ["receipt": ServerTest.stubReceipt(Self.rainbow, transaction: "r-1", price: 3_000_000)])
            #expect(bought.status == .ok || bought.status == .created, "\(bought.body)")
            let me = try await client.api(.get, "/api/v1/me", uid: "alice")
            #expect(((me.json["owned"] as? [String: Any])?["faces"] as? [Int]) == [0, 5], "\(me.body)")
            let document = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "alice").decode(
                ClientUserDocument.self)
            #expect(document.sesacCollection == [0, 5])

            // Reported: the purchase's day (the stub receipts' 2025-11-13 UTC) has the item's line and name.
            let report = try await RevenueReporter(client: db.client).daily(date: CalendarDate("2025-11-13")!)
            let line = report.whole.lines[RevenueLineKey(book: "stub", currency: "KRW", kind: .face, index: 5)]
            #expect(line?.purchases == 1 && line?.grossMilli == 3_000_000, "\(String(describing: line))")
            #expect(report.catalog.name(.face(5)) == "무지개 새싹")

            // Retired: listed (owned), marked; a purchase from now on is refused, nothing written.
            let retired = try await client.api(
                .post, "/api/v1/admin/catalog/face/5/retire", token: Self.admin, json: ["reason": "season over"])
            #expect(retired.status == .ok && retired.json["change"] as? String == "retire", "\(retired.body)")
            let listed = try #require(try await Self.catalogItem(client, "face", 5))
            #expect(listed["retired"] as? Bool == true && listed["retiredAt"] is String)
            let before = try await ledgerRowCounts(db.client)
            let refused = try await client.api(
                .post, "/api/v1/purchases", uid: "bob",
                json: ["receipt": Self.receipt(Self.rainbow, transaction: "r-2", at: Date().addingTimeInterval(60))])
            #expect(
                refused.status == .unprocessableContent && refused.errorCode == "product_retired", "\(refused.body)")
            #expect(refused.body.contains("no longer sold"))
            let sesac = try await client.sesac(
                .post, "/v1/user/shop/ios", uid: "bob",
                form: [
                    ("receipt", Self.receipt(Self.rainbow, transaction: "r-3", at: Date().addingTimeInterval(60))),
                    ("product", Self.rainbow),
                ])
            // The SeSAC clients' "receipt validation failed" (201), naming the reason.
            #expect(sesac.status == .created && sesac.body.contains("product_retired"), "\(sesac.status) \(sesac.body)")
            #expect(try await ledgerRowCounts(db.client) == before, "a refused purchase wrote nothing")

            // Still owned and equippable by its buyer; a purchase made before the retirement still records.
            let equip = try await client.api(
                .put, "/api/v1/me/equipped", uid: "alice", json: ["face": 5, "background": 0])
            #expect(equip.status == .ok, "\(equip.body)")
            let late = try await client.api(
                .post, "/api/v1/purchases", uid: "bob",
                json: ["receipt": ServerTest.stubReceipt(Self.rainbow, transaction: "r-4", price: 3_000_000)])
            #expect(late.status == .ok || late.status == .created, "\(late.body)")
            let bobs = try await client.api(.get, "/api/v1/me", uid: "bob")
            #expect(((bobs.json["owned"] as? [String: Any])?["faces"] as? [Int]) == [0, 5], "\(bobs.body)")

            // Renamed: the catalog and the reports show the new name.
            let renamed = try await client.api(
                .post, "/api/v1/admin/catalog/face/5/rename", token: Self.admin,
                json: ["name": "무지개", "reason": "shorter"])
            #expect(renamed.status == .ok && renamed.json["nameBefore"] as? String == "무지개 새싹", "\(renamed.body)")
            #expect(try await Self.catalogItem(client, "face", 5)?["name"] as? String == "무지개")
            let admin = try await client.api(.get, "/api/v1/admin/catalog", token: Self.admin)
            #expect((admin.json["items"] as? [[String: Any]])?.count == 14)
            #expect(
                try await RevenueReporter(client: db.client).daily(date: CalendarDate("2025-11-13")!).catalog.name(
                    .face(5)) == "무지개")
            #expect(try await Reconciler(client: db.client).run().passed)
        }
    }

    @Test("a classic receipt's entries: one bought before the retirement records, one after is refused alone")
    func receiptEntries() async throws {
        try await withShopServer { client, db in
            try await client.signUp("erin")
            let retired = try await client.api(
                .post, "/api/v1/admin/catalog/face/4/retire", token: Self.admin, json: ["reason": "last season"])
            #expect(retired.status == .ok, "\(retired.body)")
            let face4 = product(.face(4))
            let receipt = TestReceiptPKI.shared.receipt(
                TestReceipt(
                    bundleId: ServerTest.bundleId,
                    purchases: [
                        .init(productId: face4, transactionId: "k-1", purchaseDate: "2026-11-01T09:30:00Z"),
                        .init(
                            productId: face4, transactionId: "k-2",
                            purchaseDate: TestReceipt.timestamp(Date().addingTimeInterval(120))),
                        .init(productId: product(.face(3)), transactionId: "k-3"),
                    ]))
            let answer = try await client.api(.post, "/api/v1/purchases", uid: "erin", json: ["receipt": receipt])
            #expect(answer.status == .ok, "\(answer.body)")
            let entries = try #require(answer.json["entries"] as? [[String: Any]])
            #expect(entries.map { $0["outcome"] as? String } == ["recorded", "refused", "recorded"], "\(answer.body)")
            #expect((entries[1]["error"] as? [String: Any])?["code"] as? String == "product_retired")
            let me = try await client.api(.get, "/api/v1/me", uid: "erin")
            #expect(((me.json["owned"] as? [String: Any])?["faces"] as? [Int]) == [0, 3, 4], "\(me.body)")
            #expect(
                try await db.client.query("SELECT count(*) FROM purchases WHERE transaction_id = 'k-2'").single()
                    .decode(Int.self, at: 0) == 0)
        }
    }

    @Test("only the admin token; bad input and conflicts are clear 4xx errors and write nothing")
    func refusals() async throws {
        try await withShopServer { client, db in
            try await client.signUp("carol")
            #expect(
                try await client.api(.post, "/api/v1/admin/catalog", uid: "carol", json: Self.addBody).status
                    == .unauthorized)
            #expect(try await client.api(.post, "/api/v1/admin/catalog", json: Self.addBody).status == .unauthorized)
            #expect(try await client.api(.get, "/api/v1/admin/catalog", uid: "carol").status == .unauthorized)
            func count() async throws -> Int {
                try await db.client.query(
                    "SELECT (SELECT count(*) FROM catalog_items) * 1000 + (SELECT count(*) FROM catalog_changes)"
                ).single().decode(Int.self, at: 0)
            }
            let before = try await count()
            let adds: [([String: Any], HTTPResponse.Status, String)] = [
                (Self.addBody.filter { $0.key != "reason" }, .badRequest, "invalid_json"),
                (Self.addBody.merging(["reason": " "]) { $1 }, .unprocessableContent, "invalid_input"),
                (Self.addBody.merging(["kind": "hat"]) { $1 }, .unprocessableContent, "invalid_input"),
                (Self.addBody.merging(["index": 0]) { $1 }, .unprocessableContent, "invalid_input"),
                (Self.addBody.merging(["index": 70000]) { $1 }, .unprocessableContent, "invalid_input"),
                (Self.addBody.merging(["index": 1]) { $1 }, .conflict, "item_index_taken"),
                (
                    Self.addBody.merging(["productId": "com.memolease.sesac1.sprout1"]) { $1 }, .conflict,
                    "product_id_taken"
                ),
                (Self.addBody.merging(["productId": "bad id!"]) { $1 }, .unprocessableContent, "invalid_input"),
                (Self.addBody.merging(["name": "a\u{0}b"]) { $1 }, .unprocessableContent, "invalid_input"),
                (
                    Self.addBody.merging(["price": ["amountMilli": -1, "currency": "KRW"]]) { $1 },
                    .unprocessableContent, "invalid_input"
                ),
                (Self.addBody.merging(["price": 2500]) { $1 }, .badRequest, "invalid_json"),
            ]
            for (body, status, code) in adds {
                let answer = try await client.api(.post, "/api/v1/admin/catalog", token: Self.admin, json: body)
                #expect(answer.status == status && answer.errorCode == code, "\(body): \(answer.status) \(answer.body)")
            }
            let paths: [(String, [String: Any], HTTPResponse.Status, String)] = [
                ("face/99/rename", ["name": "x", "reason": "r"], .unprocessableContent, "no_such_item"),
                ("face/abc/rename", ["name": "x", "reason": "r"], .unprocessableContent, "invalid_input"),
                ("hat/1/rename", ["name": "x", "reason": "r"], .unprocessableContent, "invalid_input"),
                ("face/1/rename", ["reason": "r"], .unprocessableContent, "invalid_input"),
                ("face/0/retire", ["reason": "r"], .unprocessableContent, "invalid_input"),
                ("background/8/retire", ["reason": "r"], .unprocessableContent, "no_such_item"),
                ("face/1/retire", [:], .badRequest, "invalid_json"),
            ]
            for (path, body, status, code) in paths {
                let answer = try await client.api(.post, "/api/v1/admin/catalog/\(path)", token: Self.admin, json: body)
                #expect(answer.status == status && answer.errorCode == code, "\(path): \(answer.status) \(answer.body)")
            }
            #expect(try await count() == before, "nothing written")
            let first = try await client.api(
                .post, "/api/v1/admin/catalog/face/1/retire", token: Self.admin, json: ["reason": "r"])
            #expect(first.status == .ok)
            let twice = try await client.api(
                .post, "/api/v1/admin/catalog/face/1/retire", token: Self.admin, json: ["reason": "r"])
            #expect(twice.status == .conflict && twice.errorCode == "already_retired", "\(twice.body)")
            #expect(try await count() == before + 1)
        }
    }
}
