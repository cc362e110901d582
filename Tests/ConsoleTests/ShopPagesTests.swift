import Console
import Foundation
import HTTPTypes
import Ledger
import Postgres
import Reports
import TestSupport
import Testing
import Webhooks

@Suite struct ShopPagesTests {
    static let pages = [
        "/shop", "/shop/catalog", "/shop/catalog/face/2", "/shop/webhooks", "/shop/apple-sync", "/shop/ledger",
    ]

    @Test func shopPagesOpenForAdminAndAreRefusedForFinance() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "jun", role: .finance)
            try await addOperator(db, "hana", role: .admin)
            var finance = Browser(client)
            try await finance.signIn("jun", "correct horse battery")
            for page in Self.pages {
                #expect(try await finance.get(page).status == .forbidden, "\(page)")
            }
            let csrf = try #require(try await finance.get("/money").csrf)
            let reconcile = try await finance.post("/shop/ledger/reconcile", [("csrf", csrf)])
            #expect(reconcile.status == .forbidden)
            let forbiddenAdd = try await finance.post(
                "/shop/catalog", [("csrf", csrf)] + Self.newItem(index: 500, reason: "not mine"))
            #expect(forbiddenAdd.status == .forbidden)
            #expect(try await CatalogStore(client: db.client).allItems().contains { $0.index == 500 } == false)

            for language in ["en", "ko"] {
                var admin = Browser(client)
                admin.language = language
                try await admin.signIn("hana", "correct horse battery")
                for page in Self.pages {
                    let answer = try await admin.get(page)
                    #expect(answer.status == .ok, "\(language) \(page)")
                    #expect(answer.body.contains("<html lang=\"\(language)\">"), "\(language) \(page)")
                }
                let index = try await admin.get("/shop")
                #expect(index.body.contains(language == "ko" ? "<h1>상점</h1>" : "<h1>Shop</h1>"))
            }
        }
    }

    /// An item added, renamed and retired through the console is the catalog's, with the operator's
    /// name on its change rows and in the console's record.
    @Test func theCatalogIsChangedThroughCatalogStoreUnderTheOperatorsName() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "hana", role: .admin)
            var admin = Browser(client)
            try await admin.signIn("hana", "correct horse battery")
            let catalog = CatalogStore(client: db.client)
            let index = (try await catalog.allItems().filter { $0.kind == .face }.map(\.index).max() ?? 0) + 1
            let page = try await admin.get("/shop/catalog")
            let csrf = try #require(page.csrf)
            #expect(page.body.contains("<label for=\"add-price\">"))

            let added = try await admin.post("/shop/catalog", [("csrf", csrf)] + Self.newItem(index: index))
            #expect(added.status == .seeOther && added.location == "/shop/catalog?done=add")
            let item = try #require(try await catalog.allItems().first { $0.id == ItemID(kind: .face, index: index) })
            #expect(item.productId == "com.memolease.sesac1.console\(index)" && item.name == "콘솔 새싹")
            #expect(item.nameEn == "Console sprout" && item.price == Money(amountMilli: 2_500_000, currency: "KRW"))
            #expect(try await admin.get("/shop/catalog?done=add").body.contains("콘솔 새싹"))

            let renamed = try await admin.post(
                "/shop/catalog/face/\(index)/rename",
                [("csrf", csrf), ("name_en", "Console sprout II"), ("reason", "typo")])
            #expect(renamed.status == .seeOther)
            #expect(try await catalog.allItems().first { $0.id == item.id }?.nameEn == "Console sprout II")

            // Retiring asks first, and retires only when confirmed.
            let asked = try await admin.post(
                "/shop/catalog/face/\(index)/retire", [("csrf", csrf), ("reason", "season over")])
            #expect(asked.status == .ok && asked.body.contains("name=\"confirmed\" value=\"yes\""))
            #expect(try await catalog.allItems().first { $0.id == item.id }?.retiredAt == nil)
            let retired = try await admin.post(
                "/shop/catalog/face/\(index)/retire", [("csrf", csrf), ("reason", "season over"), ("confirmed", "yes")])
            #expect(retired.status == .seeOther)
            #expect(try await catalog.allItems().first { $0.id == item.id }?.retiredAt != nil)

            let changes = try await db.client.query(
                "SELECT change, actor, reason FROM catalog_changes WHERE item_kind = 'face' AND item_index = \(index) ORDER BY change_id"
            ).map { try $0.decode((String, String, String).self) }
            #expect(changes.map(\.0) == ["add", "rename", "retire"])
            #expect(changes.allSatisfy { $0.1 == "hana" })
            #expect(changes.map(\.2) == ["a console test", "typo", "season over"])
            let events = try await db.client.query(
                "SELECT action, operator, target FROM console_events WHERE action LIKE 'catalog_%' ORDER BY event_id"
            ).map { try $0.decode((String, String, String).self) }
            #expect(events.map(\.0) == ["catalog_add", "catalog_rename", "catalog_retire"])
            #expect(events.allSatisfy { $0.1 == "hana" && $0.2 == "face \(index)" })

            // The catalog's own refusal (the index is taken now), worded, with nothing written.
            let again = try await admin.post("/shop/catalog", [("csrf", csrf)] + Self.newItem(index: index))
            #expect(again.status == .unprocessableContent && again.body.contains("is taken"))
            let count = try await db.client.query("SELECT count(*) FROM console_events WHERE action = 'catalog_add'")
                .single().decode(Int.self, at: 0)
            #expect(count == 1)
        }
    }

    @Test func aPostWithoutItsCSRFFieldIsRefusedAndChangesNothing() async throws {
        try await withConsole { client, db, _ in
            try await addOperator(db, "hana", role: .admin)
            var admin = Browser(client)
            try await admin.signIn("hana", "correct horse battery")
            let before = try await CatalogStore(client: db.client).allItems()
            let noToken = try await admin.post("/shop/catalog", Self.newItem(index: 700))
            #expect(noToken.status == .forbidden && noToken.body.contains("CSRF"))
            let wrongToken = try await admin.post("/shop/catalog", [("csrf", "forged")] + Self.newItem(index: 700))
            #expect(wrongToken.status == .forbidden)
            let retire = try await admin.post("/shop/catalog/face/2/retire", [("reason", "x"), ("confirmed", "yes")])
            #expect(retire.status == .forbidden)
            #expect(try await CatalogStore(client: db.client).allItems() == before)
            let reconcile = try await admin.post("/shop/ledger/reconcile", [])
            #expect(reconcile.status == .forbidden && !reconcile.body.contains("Every check passed"))
            let actions = try await db.client.query(
                "SELECT count(*) FROM console_events WHERE action NOT LIKE 'login%'"
            ).single().decode(Int.self, at: 0)
            #expect(actions == 0)
        }
    }

    /// A replay through the console is `WebhookStore.replay`: the event is queued for the endpoint that
    /// never had it, and the console records who replayed what.
    @Test func aWebhookReplayThroughTheConsoleQueuesTheEvent() async throws {
        try await withConsole { client, db, _ in
            let store = WebhookStore(client: db.client)
            let first = try await store.addEndpoint(
                url: try WebhookURL("https://hooks.example.com/first"), events: nil,
                secret: "whsec_console_test_0123456789", actor: "setup")
            try await recordConsolePurchase(
                LedgerStore(client: db.client), "alice", "t1", item: .face(2), at: "2025-03-09T10:00:00Z")
            let event = try #require(try await store.events().last)
            let second = try await store.addEndpoint(
                url: try WebhookURL("https://hooks.example.com/second"), events: nil,
                secret: "whsec_console_test_0123456789", actor: "setup")
            try await addOperator(db, "hana", role: .admin)
            var admin = Browser(client)
            try await admin.signIn("hana", "correct horse battery")
            // One failed attempt at the first endpoint, as a delivery worker records it.
            let delivery = try #require(try await store.claim(limit: 10, lease: .seconds(60)).first)
            _ = try await store.record(
                WebhookAttemptResult(
                    outcome: .failed, statusCode: 503, error: "http_status", startedAt: instant("2025-03-09T10:00:05Z"),
                    duration: .milliseconds(120)),
                of: delivery, retryAfter: .seconds(60), giveUpAfter: .seconds(3600))
            let page = try await admin.get("/shop/webhooks")
            #expect(page.body.contains("https://hooks.example.com/second"))
            #expect(page.body.contains("No endpoint is failing."))
            let attemptsTable = try #require(page.body.range(of: "<table id=\"attempts\">"))
            let attemptRow = page.body[attemptsTable.upperBound...]
            #expect(attemptRow.contains("<a href=\"/shop/webhooks/events/\(event.eventId)\">"))
            #expect(attemptRow.contains("<span class=\"error\">failed</span>") && attemptRow.contains("503"))
            let csrf = try #require(page.csrf)
            func queued(_ endpoint: Int64) async throws -> Int {
                try await db.client.query(
                    "SELECT count(*) FROM webhook_pending WHERE endpoint_id = \(endpoint) AND event_id = \(event.eventId)"
                ).single().decode(Int.self, at: 0)
            }
            #expect(try await queued(first.endpointId) == 1)
            #expect(try await queued(second.endpointId) == 0)

            let replayed = try await admin.post(
                "/shop/webhooks/replay",
                [("csrf", csrf), ("event", WebhookEvent.publicId(event.eventId)), ("endpoint", "\(second.endpointId)")])
            #expect(replayed.status == .seeOther && replayed.location == "/shop/webhooks?done=replay&queued=1")
            #expect(try await queued(second.endpointId) == 1)
            let recorded = try await db.client.query(
                "SELECT operator, target, detail FROM console_events WHERE action = 'webhook_replay'"
            ).map { try $0.decode((String, String, String).self) }
            #expect(recorded.count == 1)
            #expect(recorded.first?.0 == "hana" && recorded.first?.1 == "endpoint \(second.endpointId)")
            #expect(recorded.first?.2 == "\(WebhookEvent.publicId(event.eventId)): queued 1")

            let eventPage = try await admin.get("/shop/webhooks/events/\(event.eventId)")
            #expect(eventPage.status == .ok && eventPage.body.contains("purchase.recorded"))
            let bad = try await admin.post(
                "/shop/webhooks/replay", [("csrf", csrf), ("from", "yesterday"), ("to", "today")])
            #expect(bad.status == .unprocessableContent && bad.body.contains("ISO 8601"))

            // Disabling asks first.
            let asked = try await admin.post("/shop/webhooks/\(second.endpointId)/disable", [("csrf", csrf)])
            let stillEnabled = try await store.endpoint(second.endpointId)?.enabled
            #expect(asked.status == .ok && stillEnabled == true)
            let disabled = try await admin.post(
                "/shop/webhooks/\(second.endpointId)/disable",
                [("csrf", csrf), ("reason", "gone"), ("confirmed", "yes")])
            #expect(disabled.status == .seeOther)
            let endpoint = try #require(try await store.endpoint(second.endpointId))
            #expect(!endpoint.enabled && endpoint.disabledBy == "hana")
        }
    }

    @Test func reconciliationRunsEveryCheckAndTheLedgerPageSaysThisIsThePrimary() async throws {
        try await withConsole { client, db, _ in
            try await recordConsolePurchase(
                LedgerStore(client: db.client), "alice", "t1", item: .face(2), at: "2025-03-09T10:00:00Z")
            try await addOperator(db, "hana", role: .admin)
            var admin = Browser(client)
            try await admin.signIn("hana", "correct horse battery")
            let page = try await admin.get("/shop/ledger")
            #expect(page.body.contains("is the primary"))
            let result = try await admin.post("/shop/ledger/reconcile", [("csrf", page.csrf ?? "")])
            #expect(result.status == .ok && result.body.contains("Every check passed."))
            for check in ReconciliationChecks.all {
                #expect(result.body.contains("<th scope=\"row\">\(check.name)</th>"), "\(check.name)")
            }
            // A broken invariant shows as a failing check.
            // A broken invariant (a purchase whose user is gone, as `ReconcilerTests` breaks it) fails its check.
            try await db.client.query("ALTER TABLE users DISABLE TRIGGER users_never_removed")
            try await db.client.query("DELETE FROM users WHERE uid = 'alice'")
            let failed = try await admin.post("/shop/ledger/reconcile", [("csrf", page.csrf ?? "")])
            #expect(failed.body.contains("FAIL") && !failed.body.contains("Every check passed."))
            #expect(failed.body.contains("purchase app_store/Production/t1"))
            let recorded = try await db.client.query(
                "SELECT detail FROM console_events WHERE action = 'reconcile' ORDER BY event_id"
            ).map { try $0.decode(String.self, at: 0) }
            #expect(recorded.count == 2 && recorded[0].hasPrefix("all ") && recorded[1].hasPrefix("failed: "))
        }
    }

    @Test func theAppleSyncPageShowsWhatTheSyncLeftInTheDatabase() async throws {
        try await withConsole { client, db, _ in
            let ledger = LedgerStore(client: db.client)
            try await recordConsolePurchase(
                ledger, "alice", "unpriced-1", item: .face(2), at: "2025-03-09T10:00:00Z", price: nil)
            let unpriced = try #require(try await ledger.unpricedPurchases(limit: 10).first)
            #expect(unpriced.transactionId == "unpriced-1")
            try await ledger.recordPriceLookupFailure(
                unpriced,
                outcome: "Apple does not know the transaction", at: instant("2025-03-10T00:00:00Z"))
            try await addOperator(db, "hana", role: .admin)
            var admin = Browser(client)
            try await admin.signIn("hana", "correct horse battery")
            let page = try await admin.get("/shop/apple-sync")
            #expect(page.status == .ok)
            #expect(page.body.contains("The sync&#39;s runs are not recorded in the database"))
            #expect(page.body.contains("<th scope=\"row\">unpriced-1</th>"))
            #expect(page.body.contains("Apple does not know the transaction"))
            #expect(page.body.contains("<dt>Purchases without a price</dt><dd>1</dd>"))
        }
    }

    static func newItem(index: Int, reason: String = "a console test") -> [(String, String)] {
        [
            ("kind", "face"), ("index", "\(index)"), ("product_id", "com.memolease.sesac1.console\(index)"),
            ("name", "콘솔 새싹"), ("name_en", "Console sprout"), ("description", ""), ("price", "2500"),
            ("currency", "KRW"), ("reason", reason),
        ]
    }
}
