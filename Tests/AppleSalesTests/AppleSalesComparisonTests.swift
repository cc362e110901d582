import CivilDates
import Foundation
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import AppleSales

/// The comparison against a real PostgreSQL: reports generated from the ledger's own rows match it
/// exactly; each planted difference is found, and nothing else.
@Suite("Apple's sales report against the ledger")
struct AppleSalesComparisonTests {
    /// Apple's day: 2025-03-09, the day Pacific time springs forward (23 hours: 08:00 UTC to 07:00 UTC).
    static let day = CalendarDate(year: 2025, month: 3, day: 9)!

    /// The ledger of the scenario: purchases in three storefronts on the day, one at 23:30 PT (the
    /// next day in UTC), one at 00:30 PT the next day, a refund on the day of a purchase the day
    /// before, and what Apple never sells (family sharing, sandbox).
    static func recordDay(_ ledger: LedgerStore) async throws {
        let purchases: [(String, String, ItemID, String, Int64?, String, String, OwnershipType, StoreEnvironment)] = [
            ("p1", "alice", .face(2), "2025-03-09T12:00:00Z", 2_500_000, "KRW", "KOR", .purchased, .production),
            // 23:30 PDT on the 9th: the 10th in UTC, Apple's 9th.
            ("p2", "bob", .face(2), "2025-03-10T06:30:00Z", 2_500_000, "KRW", "KOR", .purchased, .production),
            ("p3", "carol", .face(3), "2025-03-09T20:00:00Z", 990, "USD", "USA", .purchased, .production),
            ("p4", "alice", .background(2), "2025-03-09T10:00:00Z", 160_000, "JPY", "JPN", .purchased, .production),
            // 00:30 PDT on the 10th: not Apple's 9th.
            ("p5", "bob", .face(3), "2025-03-10T07:30:00Z", 2_500_000, "KRW", "KOR", .purchased, .production),
            // Bought the day before, refunded on the 9th.
            ("p6", "carol", .face(4), "2025-03-08T09:00:00Z", 2_500_000, "KRW", "KOR", .purchased, .production),
            // Apple's report does not list these as sales of the day.
            ("p7", "carol", .face(2), "2025-03-09T15:00:00Z", 2_500_000, "KRW", "KOR", .familyShared, .production),
            ("p8", "alice", .face(1), "2025-03-09T15:00:00Z", 1_200_000, "KRW", "KOR", .purchased, .sandbox),
        ]
        for (id, uid, item, at, price, currency, storefront, ownership, environment) in purchases {
            _ = try await ledger.recordPurchase(
                sale(
                    id, item: item, at: instant(at), price: price, currency: currency, storefront: storefront,
                    environment: environment, ownership: ownership), for: uid)
        }
        _ = try await ledger.recordRefundEvent(refund("r6", for: "p6", at: instant("2025-03-09T18:00:00Z")))
    }

    static func importing(
        _ generator: SalesReportGenerator, gzipped: Bool, into db: TestDatabase
    ) async throws
        -> AppleSalesImportOutcome
    {
        try await AppleSalesImporter(client: db.client).importReport(
            bytes: gzipped ? generator.gzipped() : generator.text(),
            fileName: "S_D_80012345_\(generator.date).txt\(gzipped ? ".gz" : "")")
    }

    @Test("a day Apple says had no sales is compared: every purchase of the ledger's day is ledger_only")
    func noSalesDay() async throws {
        try await withSalesLedger("apple_no_sales") { db, ledger in
            try await Self.recordDay(ledger)
            let importer = AppleSalesImporter(client: db.client)
            let first = try await importer.recordNoSales(date: Self.day)
            #expect(first.status == .imported && first.rows == 0)
            let again = try await importer.recordNoSales(date: Self.day)
            #expect(again.status == .alreadyImported && again.reportId == first.reportId)
            let comparison = try await AppleSalesComparer(client: db.client).compare(date: Self.day)
            #expect(comparison.matched.isEmpty)
            // face 2 in KR KRW (p1, p2), p6's refund of face 4 (−1), p3 (US USD), p4 (JP JPY): the ledger's side only.
            #expect(comparison.discrepancies.allSatisfy { $0.kind == .ledgerOnly }, "\(comparison.text)")
            #expect(
                Set(comparison.discrepancies.map { "\($0.country) \($0.currency) \($0.ledgerUnits)" })
                    == ["KR KRW 2", "KR KRW -1", "US USD 1", "JP JPY 1"], "\(comparison.text)")
            #expect(comparison.text.contains("no sales on 2025-03-09"))
            // A file Apple publishes for the day later is newer: it is the one compared.
            _ = try await Self.importing(
                try await SalesReportGenerator.fromLedger(db.client, date: Self.day), gzipped: true, into: db)
            let later = try await AppleSalesComparer(client: db.client).compare(date: Self.day)
            #expect(later.fileName.hasPrefix("S_D_") && later.discrepancies.isEmpty, "\(later.text)")
        }
    }

    @Test(
        "a report generated from the ledger matches it exactly, in every layout, gzip'd or plain",
        arguments: SalesReportGenerator.Layout.allCases, [true, false])
    func ledgerMatchesItsOwnReport(layout: SalesReportGenerator.Layout, gzipped: Bool) async throws {
        try await withSalesLedger("apple_match") { db, ledger in
            try await Self.recordDay(ledger)
            var generator = try await SalesReportGenerator.fromLedger(db.client, date: Self.day, layout: layout)
            // A restore Apple lists with no price: not a sale, not compared.
            generator.rows.append(
                .init(
                    sku: productId(.face(1)), productType: "IA3", units: 1, customerPriceMilli: 0,
                    customerCurrency: "KRW", countryCode: "KR"))
            let outcome = try await Self.importing(generator, gzipped: gzipped, into: db)
            #expect(outcome.status == .imported && outcome.date == Self.day && outcome.rows == generator.rows.count)
            let comparison = try await AppleSalesComparer(client: db.client).compare(date: Self.day)
            #expect(comparison.discrepancies.isEmpty, "\(comparison.text)")
            // sprout2 KR (p1 and p2, the 23:30 PT one), sprout3 US, background2 JP, sprout4 KR (the refund).
            let keys = comparison.matched.map { "\($0.product) \($0.country) \($0.currency)" }
            #expect(
                keys == [
                    "\(productId(.background(2))) JP JPY", "\(productId(.face(2))) KR KRW",
                    "\(productId(.face(3))) US USD", "\(productId(.face(4))) KR KRW",
                ], "\(comparison.text)")
            let sprout2 = try #require(comparison.matched.first { $0.product == productId(.face(2)) })
            #expect(sprout2.ledgerUnits == 2 && sprout2.ledgerCustomerPriceMilli == 5_000_000, "p1 and p2 (23:30 PT)")
            let refunded = try #require(comparison.matched.first { $0.product == productId(.face(4)) })
            #expect(refunded.appleUnits == -1 && refunded.appleCustomerPriceMilli == -2_500_000)
            #expect(comparison.uncompared == [.init(productType: "IA3", rows: 1, units: 1)])
            #expect(comparison.startsAtUTC == "2025-03-09 08:00:00" && comparison.endsAtUTC == "2025-03-10 07:00:00")
            #expect(comparison.passed && comparison.text.contains("Matched: 4"))
        }
    }

    @Test("each planted difference is found with Apple's figure and ours, and nothing else is reported")
    func plantedDiscrepancies() async throws {
        try await withSalesLedger("apple_planted") { db, ledger in
            try await Self.recordDay(ledger)
            var generator = try await SalesReportGenerator.fromLedger(db.client, date: Self.day)
            let rowsFromLedger = generator.rows
            // 1. A purchase Apple sold and the ledger never recorded: background5 in Korea.
            generator.rows.append(
                .init(
                    sku: productId(.background(5)), units: 1, customerPriceMilli: 3_000_000, customerCurrency: "KRW",
                    countryCode: "KR"))
            // 3. A refund Apple has and we don't: sprout3 in the US refunded on the day.
            generator.rows.append(
                .init(
                    sku: productId(.face(3)), units: -1, customerPriceMilli: 990, customerCurrency: "USD",
                    countryCode: "US"))
            // 4. A price that differs: Apple charged 170 JPY for background2 where we recorded 160.
            let japan = try #require(generator.rows.firstIndex { $0.countryCode == "JP" })
            generator.rows[japan].customerPriceMilli = 170_000
            // 5. Another country: a sale in Austria that the ledger recorded in Germany.
            generator.rows.append(
                .init(
                    sku: productId(.background(3)), units: 1, customerPriceMilli: 1_990, customerCurrency: "EUR",
                    countryCode: "AT"))
            _ = try await Self.importing(generator, gzipped: true, into: db)
            // 2. A purchase the ledger recorded and Apple lacks: background4 in Korea, after the report.
            _ = try await ledger.recordPurchase(
                sale("extra", item: .background(4), at: instant("2025-03-09T21:00:00Z"), price: 1_500_000), for: "bob")
            _ = try await ledger.recordPurchase(
                sale(
                    "germany", item: .background(3), at: instant("2025-03-09T22:00:00Z"), price: 1_990,
                    currency: "EUR", storefront: "DEU"), for: "alice")
            // And a storefront no ISO code names.
            _ = try await ledger.recordPurchase(
                sale(
                    "nowhere", item: .background(6), at: instant("2025-03-09T23:00:00Z"), price: 1_000,
                    currency: "USD", storefront: "ZZZ"), for: "carol")

            let comparison = try await AppleSalesComparer(client: db.client).compare(date: Self.day)
            let found = Dictionary(
                uniqueKeysWithValues: comparison.discrepancies.map {
                    ("\($0.product) \($0.country) \($0.currency)", $0)
                })
            #expect(found.count == 7, "\(comparison.text)")
            let appleOnly = try #require(found["\(productId(.background(5))) KR KRW"])
            #expect(appleOnly.kind == .appleOnly && appleOnly.appleUnits == 1 && appleOnly.ledgerUnits == 0)
            #expect(appleOnly.text.contains("Apple sold, we never recorded"), "\(appleOnly.text)")
            let ledgerOnly = try #require(found["\(productId(.background(4))) KR KRW"])
            #expect(ledgerOnly.kind == .ledgerOnly && ledgerOnly.ledgerUnits == 1 && ledgerOnly.appleUnits == 0)
            #expect(ledgerOnly.ledgerCustomerPriceMilli == 1_500_000)
            #expect(ledgerOnly.text.contains("we recorded, Apple never sold"), "\(ledgerOnly.text)")
            let refunded = try #require(found["\(productId(.face(3))) US USD"])
            #expect(refunded.kind == .differs && refunded.appleUnits == 0 && refunded.ledgerUnits == 1)
            #expect(refunded.appleCustomerPriceMilli == 0 && refunded.ledgerCustomerPriceMilli == 990)
            let price = try #require(found["\(productId(.background(2))) JP JPY"])
            #expect(price.kind == .differs && price.appleUnits == 1 && price.ledgerUnits == 1)
            #expect(price.appleCustomerPriceMilli == 170_000 && price.ledgerCustomerPriceMilli == 160_000)
            #expect(
                price.text.contains("Apple's report: 1 unit, 170 JPY; our ledger: 1 unit, 160 JPY"), "\(price.text)")
            #expect(found["\(productId(.background(3))) AT EUR"]?.kind == .appleOnly)
            #expect(found["\(productId(.background(3))) DE EUR"]?.kind == .ledgerOnly)
            let unmapped = try #require(found["\(productId(.background(6))) ZZZ USD"])
            #expect(unmapped.kind == .unmappedStorefront && unmapped.text.contains("storefront 'ZZZ'"))
            // Everything else the report took from the ledger still matches (all but JP and US).
            #expect(comparison.matched.count == rowsFromLedger.count - 2, "\(comparison.text)")

            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(comparison.json().utf8)) as? [String: Any])
            #expect(json["date"] as? String == "2025-03-09")
            #expect(json["matched"] as? Int == comparison.matched.count)
            let lines = try #require(json["discrepancies"] as? [[String: Any]])
            #expect(lines.count == 7)
            for line in lines {
                for field in [
                    "product", "country", "currency", "apple_units", "ledger_units", "apple_customer_price_milli",
                    "ledger_customer_price_milli",
                ] {
                    #expect(line[field] != nil, "\(field) in \(line)")
                }
            }
        }
    }

    @Test("a reversal on the day adds the unit back; a newer import of a date is the one compared")
    func reversalAndNewerImport() async throws {
        try await withSalesLedger("apple_newer") { db, ledger in
            try await Self.recordDay(ledger)
            // p3 refunded and the refund reversed, both on the day: net nothing, beside p3's purchase.
            _ = try await ledger.recordRefundEvent(refund("r3", for: "p3", at: instant("2025-03-09T21:00:00Z")))
            _ = try await ledger.recordRefundEvent(
                refund("v3", .refundReversal, for: "p3", at: instant("2025-03-09T22:00:00Z")))
            let generator = try await SalesReportGenerator.fromLedger(db.client, date: Self.day)
            var older = generator
            older.rows.removeFirst()
            let first = try await Self.importing(older, gzipped: false, into: db)
            let stale = try await AppleSalesComparer(client: db.client).compare(date: Self.day)
            #expect(!stale.passed && stale.reportId == first.reportId)
            let second = try await Self.importing(generator, gzipped: false, into: db)
            #expect(second.status == .imported && second.earlierReportsForDate == [first.reportId])
            #expect(second.summary.contains("supersedes"), "\(second.summary)")
            let current = try await AppleSalesComparer(client: db.client).compare(date: Self.day)
            #expect(current.passed && current.reportId == second.reportId, "\(current.text)")
            #expect(current.importsOfDate == 2)
            let usa = try #require(current.matched.first { $0.country == "US" })
            #expect(usa.ledgerUnits == 1, "purchase + refund − reversal... is one unit: \(current.text)")
        }
    }

    @Test("no report imported for the day is its own error, not an empty comparison")
    func noReport() async throws {
        try await withSalesLedger("apple_none") { db, ledger in
            try await Self.recordDay(ledger)
            let error = try await #require(throws: AppleSalesError.self) {
                try await AppleSalesComparer(client: db.client).compare(date: Self.day)
            }
            #expect(error.code == .noReport && error.message.contains("2025-03-09"), "\(error)")
        }
    }
}
