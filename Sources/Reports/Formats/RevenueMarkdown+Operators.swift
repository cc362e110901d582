import CivilDates
import Ledger

/// The sections of the figures operators expect (issue 28): refund rates and revenue per paying
/// user, revenue per storefront, and (daily) the day beside its trailing 7, 30 and 90 days. Written
/// once for Markdown and HTML, like the other sections.
extension RevenueMarkdown {
    /// `12.5%`, or `—` when there is nothing to divide by.
    static func rate(_ text: String?) -> ReportText { .markup(text.map { $0 + "%" } ?? "—") }

    // MARK: Refund rate and ARPPU

    static func ratesSection(_ figures: PeriodFigures, periodNoun: String, into document: inout some ReportDocument) {
        document.heading(2, "Refund rate and revenue per paying user")
        let lines = figures.books.flatMap { book in
            figures.currencies(in: book).map { (book, $0, figures.total(book: book, currency: $0)) }
        }
        guard !lines.isEmpty else {
            document.paragraph("No purchases or refunds in this \(periodNoun).")
            return
        }
        document.paragraph(
            "**Refund rate:** refunds processed in the \(periodNoun) over purchases made in it (refunds count on "
                + "the day the store processed them, whatever day they were bought, so a rate can exceed 100%; "
                + "reversals are not subtracted), in units and in money; a percentage rounded half up to one decimal, "
                + "— without purchases. **ARPPU:** net revenue over the paying users (distinct buyers in that "
                + "currency in the \(periodNoun)), rounded half to even to the milliunit; — without buyers. Test "
                + "books are shown apart and never count as revenue.")
        var table = MarkdownTable([
            ("book", .left), ("currency", .left), ("purchases", .right), ("refunds", .right),
            ("refund rate (units)", .right), ("gross", .right), ("refunded", .right), ("refund rate (amount)", .right),
            ("reversed", .right), ("net revenue", .right), ("paying users", .right), ("ARPPU", .right),
        ])
        for (book, currency, line) in lines {
            table.append([
                .text(book), .text(currency), count(line.purchases), count(line.refunds),
                rate(OperatorRates.unitRefundRate(line)),
                money(line.grossMilli, currency), money(line.refundedMilli, currency),
                rate(OperatorRates.amountRefundRate(line)), money(line.reversedMilli, currency),
                money(line.netMilli, currency), count(line.buyers),
                OperatorRates.arppuMilli(line).map { money($0, currency) } ?? "—",
            ])
        }
        document.table(table)
    }

    // MARK: Storefronts

    static func storefrontSection(
        _ storefronts: StorefrontFigures, periodNoun: String, into document: inout some ReportDocument
    ) {
        document.heading(2, "Storefronts")
        let currencies = storefronts.currencies
        guard !currencies.isEmpty else {
            document.paragraph("No production purchases or refunds in this \(periodNoun).")
            return
        }
        document.paragraph(
            "Production revenue per storefront, both stores together (the buyer's store country, ISO 3166-1 alpha-3 "
                + "as StoreKit gives it, Google Play's region as the same code; **unknown** for purchases recorded "
                + "without one). A refund or reversal counts in the "
                + "storefront of the purchase it refunds, on the day the store processed it. Each currency's "
                + "storefronts add up to its total.")
        for currency in currencies {
            document.heading(3, .text(currency))
            var table = MarkdownTable([
                ("storefront", .left), ("purchases", .right), ("gross", .right), ("refunds", .right),
                ("refunded", .right), ("reversed", .right), ("net revenue", .right), ("refund rate (units)", .right),
                ("est. proceeds", .right),
            ])
            var total = RevenueFigures()
            let lines = storefronts.sortedLines(currency: currency)
            for (key, line) in lines {
                table.append(storefrontRow(.text(key.storefrontText), line, currency))
                // The lines were summed without overflow into the currency's total already.
                try? total.addAmounts(of: line)
            }
            if lines.count > 1 { table.append(storefrontRow("**Total**", total, currency)) }
            document.table(table)
        }
    }

    static func storefrontRow(_ label: ReportText, _ line: RevenueFigures, _ currency: String) -> [ReportText] {
        [
            label, count(line.purchases), money(line.grossMilli, currency), count(line.refunds),
            money(line.refundedMilli, currency), money(line.reversedMilli, currency), money(line.netMilli, currency),
            rate(OperatorRates.unitRefundRate(line)), money(line.proceedsMilli, currency),
        ]
    }

    // MARK: Trailing 30 and 90 days (daily)

    static func trailingSection(_ report: RevenueReport, into document: inout some ReportDocument) {
        let windows = report.operators.trailingTotals
        let days = report.operators.trailing
        document.heading(2, "30- and 90-day figures")
        let production = LedgerBook.production
        let currencies = currencies(of: days, book: production)
        guard let last = days.last, !windows.isEmpty, !currencies.isEmpty else {
            document.paragraph("No production purchases or refunds in the \(days.count) days ending on this day.")
            return
        }
        document.paragraph(
            "The day beside the daily averages of the 7, 30 and 90 days ending on it (the day included; days "
                + "without activity count as zero), and the 30- and 90-day totals. Averages are rounded half away "
                + "from zero for display; refund rates are over each window's totals. Buyers are left out: distinct "
                + "buyers do not add up across days.")
        for currency in currencies {
            document.heading(3, .text(currency))
            let day = last.total(book: production, currency: currency)
            var columns: [(ReportText, MarkdownTable.Alignment)] = [
                ("figure", .left), ("\(last.period.first)", .right),
            ]
            columns += windows.map { window -> (ReportText, MarkdownTable.Alignment) in
                ("\(window.days)-day average", .right)
            }
            let totals = windows.filter { $0.days != 7 }
            columns += totals.map { window -> (ReportText, MarkdownTable.Alignment) in
                ("\(window.days)-day total", .right)
            }
            var table = MarkdownTable(columns)
            let amounts: [(ReportText, KeyPath<RevenueFigures, Int64>)] = [
                ("gross", \.grossMilli), ("refunded", \.refundedMilli), ("net revenue", \.netMilli),
                ("est. proceeds", \.proceedsMilli),
            ]
            for (label, path) in amounts {
                table.append(
                    [label, money(day[keyPath: path], currency)]
                        + windows.map {
                            money(
                                CurrencyFormat.roundedQuotient(
                                    $0.total(currency)[keyPath: path], dividedBy: Int64($0.days), currency: currency),
                                currency)
                        } + totals.map { money($0.total(currency)[keyPath: path], currency) })
            }
            let counts: [(ReportText, KeyPath<RevenueFigures, Int>)] = [
                ("purchases", \.purchases), ("refunds", \.refunds),
            ]
            for (label, path) in counts {
                table.append(
                    [label, count(day[keyPath: path])]
                        + windows.map { tenths(Int64($0.total(currency)[keyPath: path]), over: Int64($0.days)) }
                        + totals.map { count($0.total(currency)[keyPath: path]) })
            }
            let rates: [(ReportText, (RevenueFigures) -> String?)] = [
                ("refund rate (units)", OperatorRates.unitRefundRate),
                ("refund rate (amount)", OperatorRates.amountRefundRate),
            ]
            for (label, rateOf) in rates {
                table.append(
                    [label, rate(rateOf(day))] + windows.map { rate(rateOf($0.total(currency))) }
                        + totals.map { rate(rateOf($0.total(currency))) })
            }
            document.table(table)
            document.chart(
                ReportChart(
                    purpose: .trend, layout: .grouped,
                    title: "Net revenue (\(currency)) per day, \(days.first!.period.first) to \(last.period.first)",
                    currency: currency,
                    categories: days.map { String($0.period.first.description.dropFirst(5)) },
                    series: [
                        .init(
                            name: "net revenue",
                            values: days.map { $0.total(book: production, currency: currency).netMilli })
                    ]))
        }
    }

    // MARK: Month reports

    /// A month report's title, `Revenue report for 2026-11 (Asia/Seoul)`, and the command that
    /// makes it; nil for other reports.
    static func monthTitle(_ report: RevenueReport) -> String? {
        report.operators.month.map { "Revenue report for \($0) (\(report.options.timeZone))" }
    }

    static func monthCommand(_ report: RevenueReport) -> ReportText? {
        report.operators.month.map {
            "`shopledger report month \(markup: $0) --tz \(zoneText(report)) --commission \(commissionText(report))`"
        }
    }
}
