import APIViews
import AppleSales
import Foundation
import Ledger
import Reports

/// The issue 28 figures in `report … --json`: refund rates and ARPPU on every line, storefronts per
/// period, a daily report's 7/30/90-day totals, the reporting currency's figures, and Apple's
/// comparison of the day: what the files show, for scripts.
extension RevenueReportJSON {
    /// Units, amounts (integer milliunits of `currency`) and refund rates: every revenue line's keys, and
    /// all of those without buyers (storefronts, trailing windows, converted figures).
    struct Amounts: Encodable {
        let currency: String
        let purchases: Int
        let grossMilli: Int64
        let refunds: Int
        let refundedMilli: Int64
        let reversals: Int
        let reversedMilli: Int64
        let netMilli: Int64
        let commissionMilli: Int64
        let proceedsMilli: Int64
        @NullWhenNil var refundRateUnitsPercent: String?
        @NullWhenNil var refundRateAmountPercent: String?

        enum CodingKeys: String, CodingKey {
            case currency, purchases, grossMilli = "gross_milli", refunds, refundedMilli = "refunded_milli"
            case reversals, reversedMilli = "reversed_milli", netMilli = "net_milli"
            case commissionMilli = "commission_milli", proceedsMilli = "proceeds_milli"
            case refundRateUnitsPercent = "refund_rate_units_percent"
            case refundRateAmountPercent = "refund_rate_amount_percent"
        }

        init(currency: String, _ figures: RevenueFigures) {
            self.currency = currency
            purchases = figures.purchases
            grossMilli = figures.grossMilli
            refunds = figures.refunds
            refundedMilli = figures.refundedMilli
            reversals = figures.reversals
            reversedMilli = figures.reversedMilli
            netMilli = figures.netMilli
            commissionMilli = figures.commissionMilli
            proceedsMilli = figures.proceedsMilli
            refundRateUnitsPercent = OperatorRates.unitRefundRate(figures)
            refundRateAmountPercent = OperatorRates.amountRefundRate(figures)
        }
    }

    /// One storefront's production line: `storefront` (alpha-3; null for purchases recorded without
    /// one) and the `Amounts` keys.
    struct StorefrontLine: Encodable {
        let storefront: String?
        let amounts: Amounts

        enum CodingKeys: String, CodingKey { case storefront }

        func encode(to encoder: any Encoder) throws {
            try amounts.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(storefront, forKey: .storefront)
        }

        static func lines(_ figures: StorefrontFigures) -> [StorefrontLine] {
            figures.sortedLines().map {
                StorefrontLine(storefront: $0.key.storefront, amounts: Amounts(currency: $0.key.currency, $0.figures))
            }
        }
    }

    /// A daily report's production totals over the `days` days ending on its day.
    struct Trailing: Encodable {
        let days: Int
        let firstDay: String
        let lastDay: String
        let totals: [Amounts]

        enum CodingKeys: String, CodingKey {
            case days, firstDay = "first_day", lastDay = "last_day", totals
        }

        init(_ window: TrailingTotals) {
            days = window.days
            firstDay = "\(window.first)"
            lastDay = "\(window.last)"
            totals = window.totals.keys.sorted().map { Amounts(currency: $0, window.total($0)) }
        }
    }

    /// `--reporting-currency`: the production figures of every currency in one, per period (as
    /// `periods`) and for the whole report, and the days converted at an earlier day's rate.
    struct Converted: Encodable {
        struct Fallback: Encodable {
            let day: String
            let currency: String
            let rateDate: String
            enum CodingKeys: String, CodingKey { case day, currency, rateDate = "rate_date" }
        }

        let currency: String
        let periods: [Amounts]
        let whole: Amounts
        let fallbacks: [Fallback]

        init(_ converted: ConvertedFigures) {
            currency = converted.currency
            periods = converted.periods.map { Amounts(currency: converted.currency, $0) }
            whole = Amounts(currency: converted.currency, converted.whole)
            fallbacks = converted.fallbacks.map {
                Fallback(day: "\($0.day)", currency: $0.currency, rateDate: "\($0.rateDate)")
            }
        }
    }
}
