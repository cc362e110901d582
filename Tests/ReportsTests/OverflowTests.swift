import Ledger
import Receipts
import Testing

@testable import Reports

/// Report figures are exact Int64 milliunits: a sum that does not fit must fail with a message, not
/// trap and take the process down.
@Suite("Report arithmetic that overflows")
struct OverflowTests {
    static func purchases(count: Int, priceMilli: Int64) -> EntryGroup {
        EntryGroup(
            period: 1, entryKind: .purchase, book: "production", store: "app_store", currency: "KRW",
            item: ItemID(kind: .face, index: 1),
            ownership: .purchased, priceMilli: priceMilli, count: count)
    }

    @Test("units × price beyond Int64 fail with a ReportError naming the line")
    func productOverflows() throws {
        let error = try #require(throws: ReportError.self) {
            try RevenueAggregator(commission: .standard).accumulate([
                Self.purchases(count: 3, priceMilli: Int64.max / 2)
            ])
        }
        #expect(error.message.contains("overflow"), "\(error.message)")
    }

    @Test("a sum of lines beyond Int64 fails with a ReportError")
    func sumOverflows() throws {
        let half = Int64.max / 2 + 1
        let other = EntryGroup(
            period: 1, entryKind: .purchase, book: "production", store: "app_store", currency: "KRW",
            item: ItemID(kind: .face, index: 2),
            ownership: .purchased, priceMilli: half, count: 1)
        #expect(throws: ReportError.self) {
            try RevenueAggregator(commission: .standard).accumulate([Self.purchases(count: 1, priceMilli: half), other])
        }
    }
}
