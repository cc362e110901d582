import CivilDates
import Foundation

/// Apple's Summary Sales Report for one day beside the ledger's production purchases and refunds of
/// the same Pacific-time day, per (product, country, currency). Made by `AppleSalesComparer`.
public struct AppleSalesComparison: Sendable, Hashable {
    /// The zone Apple's daily reports are drawn in.
    public static let timeZone = "America/Los_Angeles"

    /// One (product, country, currency): what Apple's report says and what the ledger says.
    public struct Line: Sendable, Hashable, Comparable {
        public enum Kind: String, Sendable, Hashable {
            /// Both agree.
            case matched
            /// Apple sold it, the ledger has nothing: a sale we never recorded (money lost, a grant
            /// perhaps never given).
            case appleOnly = "apple_only"
            /// The ledger recorded it, Apple's report has nothing: investigate (a purchase Apple does
            /// not count, or a wrong product, country or currency in our record).
            case ledgerOnly = "ledger_only"
            /// Both have it with different units or customer price totals.
            case differs
            /// The ledger's storefront has no ISO 3166-1 alpha-2 code, so it cannot be matched.
            case unmappedStorefront = "unmapped_storefront"
        }

        /// Apple's SKU, our product_id.
        public let product: String
        /// ISO 3166-1 alpha-2 (Apple's Country Code; the ledger's alpha-3 storefront mapped), or
        /// the ledger's storefront as recorded when it has no alpha-2 code.
        public let country: String
        public let currency: String
        /// Sum of Units (refunds negative).
        public let appleUnits: Int64
        /// Purchases on the day, less refunds on the day, plus reversals on the day.
        public let ledgerUnits: Int64
        /// Sum of Units × Customer Price, milliunits of `currency`.
        public let appleCustomerPriceMilli: Int64
        public let ledgerCustomerPriceMilli: Int64
        /// Whether Apple's report has rows for it at all (a sale and its refund sum to zero units
        /// but are rows), and whether the ledger has purchases or refunds for it.
        public let appleListed: Bool
        public let ledgerListed: Bool

        public var kind: Kind {
            if country.utf8.count != 2 { return .unmappedStorefront }
            if appleUnits == ledgerUnits && appleCustomerPriceMilli == ledgerCustomerPriceMilli { return .matched }
            if !appleListed { return .ledgerOnly }
            if !ledgerListed { return .appleOnly }
            return .differs
        }

        public static func < (lhs: Line, rhs: Line) -> Bool {
            (lhs.product, lhs.country, lhs.currency) < (rhs.product, rhs.country, rhs.currency)
        }

        /// One sentence finance can act on, naming whose figure is whose.
        public var text: String {
            let apple = "Apple's report: \(Self.units(appleUnits)), \(money(appleCustomerPriceMilli))"
            let ledger = "our ledger: \(Self.units(ledgerUnits)), \(money(ledgerCustomerPriceMilli))"
            let key = "\(product) \(country) \(currency)"
            switch kind {
            case .matched:
                return "\(key): \(Self.units(appleUnits)), \(money(appleCustomerPriceMilli)) (Apple and ledger agree)"
            case .appleOnly:
                return "\(key): Apple sold, we never recorded (money lost?). \(apple); \(ledger)."
            case .ledgerOnly:
                return "\(key): we recorded, Apple never sold (investigate). \(apple); \(ledger)."
            case .differs:
                let more =
                    appleUnits > ledgerUnits
                    || (appleUnits == ledgerUnits && appleCustomerPriceMilli > ledgerCustomerPriceMilli)
                return
                    "\(key): figures differ (\(more ? "Apple has more than we recorded" : "we recorded more than Apple has")). \(apple); \(ledger)."
            case .unmappedStorefront:
                return
                    "\(product) storefront '\(country)' \(currency): the storefront has no ISO 3166-1 alpha-2 code, so it cannot be matched to Apple's countries. \(ledger)."
            }
        }

        func money(_ milli: Int64) -> String { "\(Milliunits.text(milli)) \(currency)" }

        /// `1 unit`, `2 units`, `-1 unit`.
        static func units(_ count: Int64) -> String { "\(count) unit\(count.magnitude == 1 ? "" : "s")" }
    }

    /// Rows of the report not compared (not IA1): restores (IA3), app downloads, subscriptions.
    public struct Uncompared: Sendable, Hashable {
        public let productType: String
        public let rows: Int
        public let units: Int64
    }

    /// Apple's day (Pacific time).
    public let date: CalendarDate
    /// The day's bounds in UTC, as PostgreSQL drew them (`YYYY-MM-DD HH:MM:SS`).
    public let startsAtUTC: String
    public let endsAtUTC: String
    /// The import compared: the newest of the date.
    public let reportId: Int64
    public let fileName: String
    /// Imports of the date in all (more than one: a newer file superseded older ones).
    public let importsOfDate: Int
    public let matched: [Line]
    public let discrepancies: [Line]
    public let uncompared: [Uncompared]
    /// Production purchases of the day with no price yet (not compared: their amount is unknown).
    public let unpricedLedgerPurchases: Int

    public var passed: Bool { discrepancies.isEmpty }

    public var text: String {
        var lines = [
            "Apple's Summary Sales Report for \(date) (Pacific time, \(Self.timeZone): \(startsAtUTC) to \(endsAtUTC) UTC) against the ledger",
            "Report \(reportId) (\(fileName))"
                + (importsOfDate > 1 ? ", the newest of \(importsOfDate) imports of this date" : ""),
            "Compared: in-app purchases (IA1) per product, country and currency, units and customer price totals; the ledger's production purchases bought for themselves (not family-shared) on that day, less refunds and plus reversals on that day.",
            "Matched: \(matched.count)",
            "Discrepancies: \(discrepancies.count)",
        ]
        lines += discrepancies.map { "  - \($0.text)" }
        if !uncompared.isEmpty {
            lines.append(
                "Not compared: "
                    + uncompared.map { "\($0.productType) \($0.rows) rows (\($0.units) units)" }.joined(separator: ", ")
                    + (uncompared.contains { $0.productType == "IA3" } ? "; IA3 are restores, not sales" : ""))
        }
        if unpricedLedgerPurchases > 0 {
            lines.append(
                "Not compared: \(unpricedLedgerPurchases) ledger purchases of the day have no price yet (`shopledger appstore sync` learns it)."
            )
        }
        lines.append(
            passed ? "Result: the ledger agrees with Apple's report." : "Result: DISCREPANCIES (exit status 1).")
        return lines.joined(separator: "\n")
    }

    /// `{"date", "matched", "discrepancies": [...]}` and a few more fields (docs/configuration.md).
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(JSONForm(self)), as: UTF8.self)
    }

    /// The JSON's shape (`reconcile apple --json`, and `apple_says` in `report daily --json`), its
    /// snake_case keys spelled out.
    public struct JSONForm: Encodable, Sendable {
        struct LineForm: Encodable, Sendable {
            let product, country, currency, kind, explanation: String
            let appleUnits, ledgerUnits, appleCustomerPriceMilli, ledgerCustomerPriceMilli: Int64

            enum CodingKeys: String, CodingKey {
                case product, country, currency, kind, explanation, appleUnits = "apple_units"
                case ledgerUnits = "ledger_units", appleCustomerPriceMilli = "apple_customer_price_milli"
                case ledgerCustomerPriceMilli = "ledger_customer_price_milli"
            }

            init(_ line: Line) {
                product = line.product
                country = line.country
                currency = line.currency
                kind = line.kind.rawValue
                explanation = line.text
                appleUnits = line.appleUnits
                ledgerUnits = line.ledgerUnits
                appleCustomerPriceMilli = line.appleCustomerPriceMilli
                ledgerCustomerPriceMilli = line.ledgerCustomerPriceMilli
            }
        }

        struct UncomparedForm: Encodable, Sendable {
            let productType: String
            let rows: Int
            let units: Int64

            enum CodingKeys: String, CodingKey { case productType = "product_type", rows, units }
        }

        let date, timeZone, startsAtUtc, endsAtUtc, fileName: String
        let reportId: Int64
        let matched: Int
        let matchedLines, discrepancies: [LineForm]
        let notCompared: [UncomparedForm]
        let unpricedLedgerPurchases: Int
        let passed: Bool

        enum CodingKeys: String, CodingKey {
            case date, timeZone = "time_zone", startsAtUtc = "starts_at_utc", endsAtUtc = "ends_at_utc"
            case fileName = "file_name", reportId = "report_id", matched, matchedLines = "matched_lines"
            case discrepancies, notCompared = "not_compared", unpricedLedgerPurchases = "unpriced_ledger_purchases"
            case passed
        }

        public init(_ comparison: AppleSalesComparison) {
            date = comparison.date.description
            timeZone = AppleSalesComparison.timeZone
            startsAtUtc = comparison.startsAtUTC
            endsAtUtc = comparison.endsAtUTC
            fileName = comparison.fileName
            reportId = comparison.reportId
            matched = comparison.matched.count
            matchedLines = comparison.matched.map(LineForm.init)
            discrepancies = comparison.discrepancies.map(LineForm.init)
            notCompared = comparison.uncompared.map {
                UncomparedForm(productType: $0.productType, rows: $0.rows, units: $0.units)
            }
            unpricedLedgerPurchases = comparison.unpricedLedgerPurchases
            passed = comparison.passed
        }
    }
}
