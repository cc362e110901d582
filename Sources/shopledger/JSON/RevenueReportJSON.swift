import APIViews
import AppleSales
import Foundation
import Ledger
import Reports

/// `report daily|range --json`: the files written and the report's figures, so a script gets the numbers
/// without parsing the CSV. Each period lists its revenue lines (item, kind and currency totals; money in
/// integer milliunits of the line's currency), the same lines per store (`stores`) and its grants without
/// revenue; `whole` is the whole range.
struct RevenueReportJSON: Encodable {
    /// A revenue line: the `Amounts` keys (currency, units, amounts, refund rates) and what places it
    /// (book, level, kind, index), its buyers and ARPPU.
    struct Line: Encodable {
        let book: String
        let level: String
        @NullWhenNil var kind: String?
        @NullWhenNil var index: Int?
        let buyers: Int
        let firstTimeBuyers: Int
        @NullWhenNil var arppuMilli: Int64?
        let amounts: Amounts

        enum CodingKeys: String, CodingKey {
            case book, level, kind, index, buyers, firstTimeBuyers = "first_time_buyers", arppuMilli = "arppu_milli"
        }

        init(_ key: RevenueLineKey, _ figures: RevenueFigures) {
            book = key.book
            level = key.level.rawValue
            kind = key.kind?.rawValue
            index = key.index
            buyers = figures.buyers
            firstTimeBuyers = figures.firstTimeBuyers
            arppuMilli = OperatorRates.arppuMilli(figures)
            amounts = Amounts(currency: key.currency, figures)
        }

        func encode(to encoder: any Encoder) throws {
            try amounts.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(book, forKey: .book)
            try container.encode(level, forKey: .level)
            try container.encode(_kind, forKey: .kind)
            try container.encode(_index, forKey: .index)
            try container.encode(buyers, forKey: .buyers)
            try container.encode(firstTimeBuyers, forKey: .firstTimeBuyers)
            try container.encode(_arppuMilli, forKey: .arppuMilli)
        }
    }

    /// A revenue line of one store (`app_store`, `google_play`): a `Line` with its `store`. The stores'
    /// units and amounts add up to the period's lines; buyers are counted per store.
    struct StoreLine: Encodable {
        let store: String
        let line: Line

        enum CodingKeys: String, CodingKey { case store }

        func encode(to encoder: any Encoder) throws {
            try line.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(store, forKey: .store)
        }
    }

    struct Grant: Encodable {
        let book: String
        let kind: String
        let index: Int
        let familyShared: Int
        let familyRevokes: Int
        let unpriced: Int
        let supportGrants: Int
        let supportRevokes: Int

        enum CodingKeys: String, CodingKey {
            case book, kind, index, familyShared = "family_shared", familyRevokes = "family_revokes", unpriced
            case supportGrants = "support_grants", supportRevokes = "support_revokes"
        }
    }

    struct Period: Encodable {
        let firstDay: String
        let lastDay: String
        let lines: [Line]
        let stores: [StoreLine]
        let grants: [Grant]
        let storefronts: [StorefrontLine]

        enum CodingKeys: String, CodingKey {
            case firstDay = "first_day", lastDay = "last_day", lines, stores, grants, storefronts
        }

        init(_ figures: PeriodFigures, storefronts: StorefrontFigures) {
            self.storefronts = StorefrontLine.lines(storefronts)
            firstDay = "\(figures.period.first)"
            lastDay = "\(figures.period.last)"
            lines = figures.sortedLines().map { Line($0.key, $0.figures) }
            stores = figures.stores().flatMap { store in
                figures.sortedLines(store: store).map { StoreLine(store: store, line: Line($0.key, $0.figures)) }
            }
            grants = figures.sortedGrants().map {
                Grant(
                    book: $0.key.book, kind: $0.key.item.kind.rawValue, index: $0.key.item.index,
                    familyShared: $0.figures.familyShared, familyRevokes: $0.figures.familyRevokes,
                    unpriced: $0.figures.unpriced, supportGrants: $0.figures.supportGrants,
                    supportRevokes: $0.figures.supportRevokes)
            }
        }
    }

    struct Check: Encodable {
        let name: String
        let passed: Bool
        let failureCount: Int
        enum CodingKeys: String, CodingKey {
            case name, passed, failureCount = "failure_count"
        }
    }

    let files: [String]
    let timeZone: String
    /// When the newest ledger entry was recorded, ISO 8601 in UTC (`YYYY-MM-DDTHH:MM:SSZ`, like every date
    /// of the CLI's JSON; the report's own text says `YYYY-MM-DD HH:MM:SS` UTC); null for an empty ledger.
    @NullWhenNil var dataAsOf: String?
    let periods: [Period]
    let whole: Period
    let reconciled: Bool
    let reconciliation: [Check]
    /// Daily only (empty for a range): the 7-, 30- and 90-day production totals ending on the day.
    let trailing: [Trailing]
    /// With `--reporting-currency`; null without.
    @NullWhenNil var converted: Converted?
    /// Daily only: Apple's Summary Sales Report of the same date against the ledger (the shape of
    /// `reconcile apple --json`); null when none was imported, and for a range.
    @NullWhenNil var appleSays: AppleSalesComparison.JSONForm?

    enum CodingKeys: String, CodingKey {
        case files, timeZone = "time_zone", dataAsOf = "data_as_of", periods, whole, reconciled, reconciliation
        case trailing, converted, appleSays = "apple_says"
    }

    init(_ report: RevenueReport, files: [String]) {
        self.files = files
        timeZone = report.options.timeZone
        dataAsOf = report.dataAsOf.map { $0.replacingOccurrences(of: " ", with: "T") + "Z" }
        let storefronts = report.operators.storefronts
        periods = report.periods.enumerated().map { index, figures in
            Period(figures, storefronts: storefronts.indices.contains(index) ? storefronts[index] : StorefrontFigures())
        }
        whole = Period(report.whole, storefronts: report.operators.wholeStorefronts)
        trailing = report.operators.trailingTotals.map(Trailing.init)
        converted = report.converted.map(Converted.init)
        appleSays = report.appleSays.map(AppleSalesComparison.JSONForm.init)
        reconciled = report.reconciled
        reconciliation = report.reconciliation.map {
            Check(name: $0.name, passed: $0.passed, failureCount: $0.failureCount)
        }
    }
}
