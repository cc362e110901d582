import Foundation
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Ledger

@Suite("Catalog administration: add, rename, retire")
struct CatalogAdminTests {
    static let request = SupportRequest(actor: "ops-kim", reason: "the winter collection")
    static let rainbow = NewCatalogItem(
        item: .face(5), productId: "com.memolease.sesac1.sprout5", name: "무지개 새싹", nameEn: "Rainbow sprout",
        description: "일곱 빛깔 새싹입니다.", price: Money(amountMilli: 3_000_000, currency: "KRW"))

    /// A purchase of `productId` made at `date`, as the Receipts module would hand it over.
    static func purchase(
        _ id: String, productId: String, at date: Date, price: Int64 = 3_000_000
    )
        -> VerifiedTransaction
    {
        VerifiedTransaction(
            store: .appStore, environment: .production, transactionId: id, originalTransactionId: id,
            bundleId: "com.memolease.sesac1", productId: productId, productType: .nonConsumable, purchaseDate: date,
            originalPurchaseDate: date, signedDate: date.addingTimeInterval(1), priceMilli: price, currency: "KRW",
            storefront: "KOR", ownershipType: .purchased, appAccountToken: nil, evidenceSHA256: fakeDigest("p/\(id)"))
    }

    static func changeRows(_ client: PostgresClient) async throws -> [(String, String, String?, String, String?)] {
        try await client.query(
            """
            SELECT change, item_kind || ' ' || item_index, name_before, name_after, name_en_after
            FROM catalog_changes ORDER BY change_id
            """
        ).map { try $0.decode((String, String, String?, String, String?).self) }
    }

    @Test("an added item is listed and sold at once; a rename and a retirement are audited with who and why")
    func addRenameRetire() async throws {
        try await withLedger { db, ledger in
            let catalog = CatalogStore(client: db.client)
            _ = try await ledger.register(uid: "alice", profile: testProfile)

            let added = try await catalog.add(Self.rainbow, Self.request)
            #expect(added.kind == .add && added.actor == "ops-kim" && added.reason == "the winter collection")
            #expect(added.item.nameEn == "Rainbow sprout" && added.item.retiredAt == nil)
            let listed = try #require(try await catalog.allItems().first { $0.kind == .face && $0.index == 5 })
            #expect(listed == added.item)
            #expect(try await catalog.allItems().count == 14)

            // Sold and owned: the purchase statement reads the catalog, nothing to restart or reload.
            let bought = try await ledger.recordPurchase(
                Self.purchase("r1", productId: "com.memolease.sesac1.sprout5", at: Date()), for: "alice")
            #expect(bought.isRecorded && bought.purchase?.item == .face(5))
            #expect(try await ledger.inventory(of: "alice").faces == [0, 5])

            let renamed = try await catalog.rename(
                .face(5), name: "무지개", nameEn: nil, SupportRequest(actor: "ops-lee", reason: "shorter"))
            #expect(renamed.nameBefore == "무지개 새싹" && renamed.nameEnBefore == "Rainbow sprout")
            #expect(renamed.item.name == "무지개" && renamed.item.nameEn == "Rainbow sprout")
            // The free items may be renamed (their English name is set for the first time here).
            let sky = try await catalog.rename(.background(0), name: nil, nameEn: "Sky park", Self.request)
            #expect(sky.item.name == "하늘 공원" && sky.item.nameEn == "Sky park" && sky.nameEnBefore == nil)

            let retired = try await catalog.retire(.face(5), Self.request)
            let retiredAt = try #require(retired.item.retiredAt)
            #expect(retired.kind == .retire && retired.changedAt == retiredAt)

            let rows = try await Self.changeRows(db.client)
            #expect(rows.map(\.0) == ["add", "rename", "rename", "retire"])
            #expect(rows.map(\.1) == ["face 5", "face 5", "background 0", "face 5"])
            #expect(rows[0].2 == nil && rows[1].2 == "무지개 새싹" && rows[1].3 == "무지개" && rows[3].3 == "무지개")
            #expect(
                try await scalar(db.client, "SELECT count(*) FROM catalog_changes WHERE actor = 'ops-lee'") == 1)

            // Still owned, still equippable after retirement.
            #expect(try await ledger.inventory(of: "alice").faces == [0, 5])
            let equipped = try await ledger.equip(face: 5, background: 0, for: "alice")
            #expect(equipped == .equipped(EquippedItems(face: 5, background: 0)), "\(equipped)")
        }
    }

    @Test("a retired item is not sold from its retirement on; a purchase made before it still records")
    func retiredNotSold() async throws {
        try await withLedger { db, ledger in
            let catalog = CatalogStore(client: db.client)
            _ = try await ledger.register(uid: "bob", profile: testProfile)
            _ = try await catalog.add(Self.rainbow, Self.request)
            let product = "com.memolease.sesac1.sprout5"
            let retiredAt = try #require(try await catalog.retire(.face(5), Self.request).item.retiredAt)

            let before = try await ledgerRowCounts(db.client)
            let error = try await #require(throws: LedgerError.self) {
                try await ledger.recordPurchase(
                    Self.purchase("after", productId: product, at: retiredAt.addingTimeInterval(60)), for: "bob")
            }
            #expect(error.code == .productRetired && error.message.contains("no longer sold"), "\(error)")
            // A seeded item retired too: the same refusal through the same statement.
            _ = try await catalog.retire(.background(7), Self.request)
            let seeded = try await #require(throws: LedgerError.self) {
                try await ledger.recordPurchase(
                    Self.purchase(
                        "bg7", productId: "com.memolease.sesac1.background7", at: Date().addingTimeInterval(60),
                        price: 2_500_000), for: "bob")
            }
            #expect(seeded.code == .productRetired)
            // An unknown product is still refused as unknown.
            let unknown = try await #require(throws: LedgerError.self) {
                try await ledger.recordPurchase(
                    Self.purchase("u1", productId: "com.memolease.sesac1.sprout99", at: Date()), for: "bob")
            }
            #expect(unknown.code == .unknownProduct)
            var after = try await ledgerRowCounts(db.client)
            after["catalog_changes"] = before["catalog_changes"]  // the second retirement
            #expect(after == before, "a refused purchase wrote nothing")

            // A late receipt, a restore or a notification of a purchase made before the retirement.
            let late = try await ledger.recordPurchase(
                Self.purchase("before", productId: product, at: retiredAt.addingTimeInterval(-1)), for: "bob")
            #expect(late.isRecorded && late.purchase?.item == .face(5))
            #expect(try await ledger.inventory(of: "bob").faces == [0, 5])
            // The same purchase posted again is its duplicate, not a refusal.
            let again = try await ledger.recordPurchase(
                Self.purchase("before", productId: product, at: retiredAt.addingTimeInterval(-1)), for: "bob")
            #expect(again.isDuplicate)
            // Support may still grant a retired item (compensation for a purchase that could not complete).
            _ = try await ledger.grantCompensation(.background(7), to: "bob", Self.request)
            #expect(try await ledger.inventory(of: "bob").backgrounds == [0, 7])
        }
    }

    @Test("bad requests get a clear, typed error and write nothing")
    func refusals() async throws {
        try await withLedger { db, _ in
            let catalog = CatalogStore(client: db.client)
            _ = try await catalog.add(Self.rainbow, Self.request)
            _ = try await catalog.retire(.face(5), Self.request)
            func with(_ change: (inout NewCatalogItem) -> Void) -> NewCatalogItem {
                var item = Self.rainbow
                item.item = .face(6)
                item.productId = "com.memolease.sesac1.sprout6"
                change(&item)
                return item
            }
            let adds: [(LedgerError.Code, NewCatalogItem, String)] = [
                (.itemIndexTaken, with { $0.item = .face(1) }, "face 1 is taken"),
                (.productIdTaken, with { $0.productId = "com.memolease.sesac1.sprout2" }, "is taken (by face 2)"),
                (.productIdTaken, with { $0.productId = "com.memolease.sesac1.sprout5" }, "by face 5"),
                (.invalidInput, with { $0.item = .face(0) }, "index 0"),
                (.invalidInput, with { $0.item = .background(-1) }, "the index must be"),
                (.invalidInput, with { $0.item = .face(32768) }, "the index must be"),
                (.invalidInput, with { $0.productId = "com.memolease/sprout6" }, "product id"),
                (.invalidInput, with { $0.productId = "" }, "product id"),
                (.invalidInput, with { $0.productId = String(repeating: "a", count: 101) }, "product id"),
                (.invalidInput, with { $0.name = "  " }, "must not be empty"),
                (.invalidInput, with { $0.nameEn = "" }, "must not be empty"),
                (.invalidInput, with { $0.name = String(repeating: "새", count: 101) }, "at most 100"),
                (.invalidInput, with { $0.name = "새싹\u{0}" }, "control characters"),
                (.invalidInput, with { $0.nameEn = "Sprout\u{1B}[2J" }, "control characters"),
                (.invalidInput, with { $0.nameEn = "Sprout\u{2028}two" }, "control characters"),
                (.invalidInput, with { $0.name = "새\u{200B}싹" }, "invisible"),
                (.invalidInput, with { $0.description = String(repeating: "x", count: 501) }, "at most 500"),
                (.invalidInput, with { $0.price = Money(amountMilli: 0, currency: "KRW") }, "above zero"),
                (.invalidInput, with { $0.price = Money(amountMilli: -5, currency: "KRW") }, "above zero"),
                (.invalidInput, with { $0.price = Money(amountMilli: 1000, currency: "krw") }, "currency"),
            ]
            let before = try await Self.counts(db.client)
            for (code, item, message) in adds {
                let error = try await #require(throws: LedgerError.self, "\(item)") {
                    try await catalog.add(item, Self.request)
                }
                #expect(
                    error.code == code && error.message.contains(message), "\(item.item) \(item.productId): \(error)")
            }
            let others: [(LedgerError.Code, String, () async throws -> Void)] = [
                (
                    .invalidInput, "a reason is required",
                    { _ = try await catalog.add(with { _ in }, .init(actor: "a", reason: " ")) }
                ),
                (.invalidInput, "actor", { _ = try await catalog.add(with { _ in }, .init(actor: "", reason: "r")) }),
                (
                    .noSuchItem, "no face 99",
                    { _ = try await catalog.rename(.face(99), name: "x", nameEn: nil, Self.request) }
                ),
                (
                    .noSuchItem, "no face 40000",
                    { _ = try await catalog.rename(.face(40000), name: "x", nameEn: nil, Self.request) }
                ),
                (
                    .invalidInput, "give a new",
                    { _ = try await catalog.rename(.face(1), name: nil, nameEn: nil, Self.request) }
                ),
                (
                    .invalidInput, "control",
                    { _ = try await catalog.rename(.face(1), name: "a\nb", nameEn: nil, Self.request) }
                ),
                (
                    .invalidInput, "a reason is required",
                    { _ = try await catalog.rename(.face(1), name: "x", nameEn: nil, .init(actor: "a", reason: "")) }
                ),
                (.invalidInput, "index 0", { _ = try await catalog.retire(.face(0), Self.request) }),
                (.noSuchItem, "no background 8", { _ = try await catalog.retire(.background(8), Self.request) }),
                (.alreadyRetired, "retired already", { _ = try await catalog.retire(.face(5), Self.request) }),
            ]
            for (code, message, call) in others {
                let error = try await #require(throws: LedgerError.self, "\(message)") { try await call() }
                #expect(error.code == code && error.message.contains(message), "\(error)")
            }
            #expect(try await Self.counts(db.client) == before, "nothing written")
        }
    }

    static func counts(_ client: PostgresClient) async throws -> [String] {
        try await client.query(
            """
            SELECT kind || item_index || coalesce(product_id, '') || name || coalesce(name_en, '') || coalesce(retired_at::text, '')
            FROM catalog_items
            UNION ALL SELECT 'changes ' || count(*) FROM catalog_changes
            ORDER BY 1
            """
        ).map { try $0.decode(String.self, at: 0) }
    }

    @Test("catalog rows are never deleted, and kind, index, product id, price and retirement never change")
    func catalogRowsKept() async throws {
        try await withLedger { db, _ in
            let catalog = CatalogStore(client: db.client)
            _ = try await catalog.add(Self.rainbow, Self.request)
            _ = try await catalog.retire(.face(5), Self.request)
            for statement in [
                "DELETE FROM catalog_items WHERE kind = 'face' AND item_index = 5",
                "TRUNCATE catalog_items CASCADE",
                "UPDATE catalog_items SET price_milli = 1 WHERE kind = 'face' AND item_index = 1",
                "UPDATE catalog_items SET currency = 'USD' WHERE kind = 'face' AND item_index = 1",
                "UPDATE catalog_items SET product_id = 'x.y' WHERE kind = 'face' AND item_index = 1",
                "UPDATE catalog_items SET item_index = 9 WHERE kind = 'face' AND item_index = 1",
                "UPDATE catalog_items SET retired_at = NULL WHERE kind = 'face' AND item_index = 5",
                "UPDATE catalog_items SET retired_at = now() - interval '1 day' WHERE kind = 'face' AND item_index = 5",
            ] {
                let error = try await #require(throws: PostgresError.self, "\(statement)") {
                    try await db.client.withTransaction { connection in
                        // Replica mode does not switch the refusal off (ENABLE ALWAYS).
                        try await connection.query("SET LOCAL session_replication_role = replica")
                        try await connection.query(PostgresQuery(unsafeSQL: statement))
                    }
                }
                #expect(error.sqlState == SQLState("SL001"), "\(statement): \(error)")
            }
            // The free item cannot be retired even by hand.
            await #expect(throws: PostgresError.self) {
                try await db.client.query(
                    "UPDATE catalog_items SET retired_at = now() WHERE kind = 'face' AND item_index = 0")
            }
            #expect(try await catalog.allItems().count == 14)
            #expect(try await scalar(db.client, "SELECT count(*) FROM catalog_items WHERE retired_at IS NOT NULL") == 1)
            // The audit trail is append-only (AppendOnlyTests covers every such table the same way).
            for statement in ["UPDATE catalog_changes SET reason = 'x'", "DELETE FROM catalog_changes"] {
                let error = try await #require(throws: PostgresError.self) {
                    try await db.client.query(PostgresQuery(unsafeSQL: statement))
                }
                #expect(error.sqlState == SQLState("SL001") && error.message.contains("append-only"))
            }
            #expect(try await scalar(db.client, "SELECT count(*) FROM catalog_changes") == 2)
        }
    }

    @Test("catalog_audited passes on audited changes, and names a sale after retirement and unaudited edits")
    func reconciliation() async throws {
        try await withTestDatabase { db in
            let ledger = LedgerStore(client: db.client)
            let catalog = CatalogStore(client: db.client)
            let reconciler = Reconciler(client: db.client, checks: [CatalogInvariants.audited])
            _ = try await ledger.register(uid: "dana", profile: testProfile)
            _ = try await catalog.add(Self.rainbow, Self.request)
            _ = try await catalog.rename(.face(5), name: "무지개", nameEn: nil, Self.request)
            _ = try await ledger.recordPurchase(
                Self.purchase("d1", productId: "com.memolease.sesac1.sprout5", at: Date().addingTimeInterval(60)),
                for: "dana")
            _ = try await catalog.retire(.face(5), Self.request)
            let shipped = try await reconciler.run()
            #expect(shipped.passed, "\(shipped.text)")

            // A hand edit with the trigger off: the retirement moved before the purchase it would have
            // refused, a name changed without a change row, and the trigger left disabled.
            try await db.client.query("ALTER TABLE catalog_items DISABLE TRIGGER catalog_items_never_removed")
            try await db.client.query(
                """
                UPDATE catalog_items SET retired_at = now() - interval '1 day', name_en = 'Rainbow'
                WHERE kind = 'face' AND item_index = 5
                """)
            let broken = try await reconciler.run()
            #expect(!broken.passed)
            for expected in [
                "purchase app_store/Production/d1", "retire changes at that time, expected one",
                "its last change says", "no trigger enabled ALWAYS refusing UPDATE", "refusing DELETE",
            ] {
                #expect(broken.text.contains(expected), "\(expected) in \(broken.text)")
            }
        }
    }

    @Test("concurrent adds of one index and concurrent retirements: one succeeds, the others are refused")
    func concurrent() async throws {
        try await withLedger { db, _ in
            let catalog = CatalogStore(client: db.client)
            let adds = await Self.concurrently(8) { n in
                var item = Self.rainbow
                item.productId = "com.memolease.sesac1.sprout5_\(n)"
                _ = try await catalog.add(item, Self.request)
            }
            #expect(adds.filter { $0 == nil }.count == 1, "\(adds)")
            #expect(adds.compactMap { $0 }.allSatisfy { $0 == .itemIndexTaken }, "\(adds)")
            let retires = await Self.concurrently(8) { _ in _ = try await catalog.retire(.face(5), Self.request) }
            #expect(retires.filter { $0 == nil }.count == 1, "\(retires)")
            #expect(retires.compactMap { $0 }.allSatisfy { $0 == .alreadyRetired }, "\(retires)")
            let changes = try await scalar(db.client, "SELECT count(*) FROM catalog_changes")
            #expect(changes == 2, "one add, one retire")
        }
    }

    @Test("a price is an exact decimal in major units, read into milliunits without floating point")
    func prices() throws {
        let accepted: [(String, Int64)] = [
            ("2500", 2_500_000), ("0.99", 990), ("1200.5", 1_200_500), ("007", 7000), ("0.001", 1),
            ("999999999999", 999_999_999_999_000),
        ]
        for (text, milli) in accepted {
            #expect(
                try CatalogRules.price(text, currency: "KRW") == Money(amountMilli: milli, currency: "KRW"), "\(text)")
        }
        for text in [
            "", "0", "0.000", "-5", "+5", "2,500", "1e3", "1.2345", "1.", ".5", " 5", "٣", "1000000000000", "NaN",
        ] {
            #expect(throws: LedgerError.self, "\(text)") { try CatalogRules.price(text, currency: "KRW") }
        }
        #expect(throws: LedgerError.self) { try CatalogRules.price("5", currency: "won") }
    }

    /// Runs `body` `count` times at once; each run's ledger error code, nil when it succeeded.
    static func concurrently(
        _ count: Int, _ body: @escaping @Sendable (Int) async throws -> Void
    ) async -> [LedgerError.Code?] {
        await withTaskGroup(of: LedgerError.Code?.self) { group in
            for n in 0..<count {
                group.addTask {
                    do {
                        try await body(n)
                        return nil
                    } catch let error as LedgerError {
                        return error.code
                    } catch {
                        return LedgerError.Code("unexpected: \(error)")
                    }
                }
            }
            return await group.reduce(into: [LedgerError.Code?]()) { $0.append($1) }
        }
    }
}
