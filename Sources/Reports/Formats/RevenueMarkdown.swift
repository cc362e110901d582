import CivilDates
import Ledger

/// The report as Markdown that reads well on GitHub (tables, a Mermaid `xychart-beta` trend) and
/// as plain text (tables padded to line up, every chart also given as a table). Its sections write
/// into any `ReportDocument`: `RevenueHTML` renders the same sections as HTML with SVG charts.
public enum RevenueMarkdown {
    public static func render(_ report: RevenueReport) -> String {
        var document = MarkdownDocument()
        switch report.kind {
        case .daily(let date): daily(report, date: date, into: &document)
        case .range(let first, let last, let grouping):
            range(report, first: first, last: last, grouping: grouping, into: &document)
        }
        return document.text
    }

    // MARK: Daily

    static func daily(_ report: RevenueReport, date: CalendarDate, into document: inout some ReportDocument) {
        let zone = zoneText(report)
        let day = report.whole
        document.heading(1, "Revenue report for \(date) (\(zone))")
        document.bullets(
            [
                "**Day:** \(date) in \(zone), from \(markup: day.period.startsAtUTC) UTC to \(markup: day.period.endsAtUTC) UTC (\(markup: day.period.lengthText))."
            ] + definitions(report, periodNoun: "day"))

        document.heading(2, "Headline")
        headline(report, into: &document)
        reportingCurrencySection(report, into: &document)
        if day.hasProductionActivity {
            document.chart(unitsChart(day, catalog: report.catalog, periodText: "\(date)"))
        }

        for kind in ItemKind.allCases {
            document.heading(2, .markup(kindTitle(kind)))
            kindTable(
                kind, in: day, catalog: report.catalog,
                emptyText: "No \(markup: kind.rawValue) purchases or refunds on this day.", into: &document)
        }
        ratesSection(day, periodNoun: "day", into: &document)
        storefrontSection(report.operators.wholeStorefronts, periodNoun: "day", into: &document)
        storeSection(day, periodNoun: "day", into: &document)

        document.heading(2, "Refunds on this day")
        refundsSection(report, into: &document)

        document.heading(2, "\(RevenueReporter.trendDays)-day trend")
        trendSection(report.trend, into: &document)
        trailingSection(report, into: &document)

        grantsAndTestTraffic(day, catalog: report.catalog, periodNoun: "day", into: &document)
        appleSaysSection(report, into: &document)
        reconciliationSection(report, into: &document)
        document.footer(
            "Made by `shopledger report daily --date \(date) --tz \(zone) --commission \(commissionText(report))`."
                + dataAsOfText(report))
    }

    /// The report's time zone: a name the database's zone table holds (checked before the report is
    /// read), so the report's own text.
    static func zoneText(_ report: RevenueReport) -> ReportText { .markup(report.options.timeZone) }

    static func commissionText(_ report: RevenueReport) -> ReportText { .markup(report.options.commission.description) }

    /// The footer's watermark: ` Data as of 2025-03-09 12:00:00 UTC.` (the database's time).
    static func dataAsOfText(_ report: RevenueReport) -> ReportText {
        report.dataAsOf.map { " Data as of \(markup: $0) UTC." } ?? " The ledger is empty."
    }

    /// The definitions every report states: what is counted, how estimates are made, the
    /// reconciliation verdict and the watermark.
    static func definitions(_ report: RevenueReport, periodNoun: String) -> [ReportText] {
        let rate = ReportText.markup(report.options.commission.percentText)
        let verdict: ReportText =
            report.reconciled
            ? "passed: the report's totals equal the ledger's postings (details at the end)."
            : "**FAILED**: the figures below disagree with the ledger; see the end of the report before using them."
        let on: ReportText = periodNoun == "day" ? "on" : "in"
        return [
            "**Counted:** App Store and Google Play production purchases \(on) the \(periodNoun) they were made; refunds and refund "
                + "reversals \(on) the \(periodNoun) the store processed them (the signed date of its notification), "
                + "whenever the purchase was made. "
                + "Family-shared and unpriced purchases are grants, not revenue. Sandbox, Xcode and stub activity is listed "
                + "under \"Test traffic\" and never counted as revenue.",
            "**Buyers:** distinct users with a priced purchase of their own in the \(periodNoun); **first-time** ones had "
                + "none before it.",
            "**Estimates:** store commission at \(rate) of each unit's price, rounded half up to the currency's minor unit; "
                + "proceeds are net revenue minus that commission. Prices include tax where the store collects it, and tax is "
                + "not estimated: the store's financial reports are the final word.",
            "**Reconciliation:** \(verdict)",
            "**Data as of:** "
                + (report.dataAsOf.map { "\(markup: $0) UTC (the newest ledger entry recorded)." }
                    ?? "the ledger is empty."),
        ]
    }

    // MARK: Range

    static func range(
        _ report: RevenueReport, first: CalendarDate, last: CalendarDate, grouping: ReportGrouping,
        into document: inout some ReportDocument
    ) {
        let zone = zoneText(report)
        let whole = report.whole
        let noun = ReportText.markup(grouping.rawValue)
        document.heading(
            1,
            monthTitle(report).map(ReportText.markup) ?? "Revenue report for \(first) to \(last) by \(noun) (\(zone))")
        var periodText: ReportText =
            "**Range:** \(first) to \(last) in \(zone), from \(markup: whole.period.startsAtUTC) UTC to "
            + "\(markup: whole.period.endsAtUTC) UTC: \(report.periods.count) \(noun)\(markup: report.periods.count == 1 ? "" : "s")"
        switch grouping {
        case .day: periodText += "."
        case .week: periodText += " (Monday to Sunday; the first and last may be partial)."
        case .month: periodText += " (calendar months; the first and last may be partial)."
        }
        document.bullets([periodText] + definitions(report, periodNoun: "period"))

        document.heading(2, "Totals per \(noun)")
        let currencies = currencies(of: [whole], book: LedgerBook.production)
        if currencies.isEmpty { document.paragraph("No production purchases or refunds in this range.") }
        for currency in currencies {
            document.heading(3, .text(currency))
            var table = periodTable(firstColumn: noun)
            for figures in report.periods {
                table.append(
                    periodRow(
                        .markup(figures.period.label), figures.total(book: LedgerBook.production, currency: currency),
                        currency))
            }
            table.append(
                periodRow("**Whole range**", whole.total(book: LedgerBook.production, currency: currency), currency))
            document.table(table)
        }
        let overall = whole.buyersByBook[LedgerBook.production] ?? BuyerCounts()
        if currencies.count > 1 {
            document.paragraph(
                "Buyers in all currencies over the range: \(count(overall.buyers)) "
                    + "(\(count(overall.firstTime)) first-time).")
        }
        reportingCurrencySection(report, into: &document)

        if whole.hasProductionActivity {
            document.chart(unitsChart(whole, catalog: report.catalog, periodText: "\(first) to \(last)"))
        }
        for kind in ItemKind.allCases {
            document.heading(2, .markup(kindTitle(kind) + " over the range"))
            kindTable(
                kind, in: whole, catalog: report.catalog,
                emptyText: "No \(markup: kind.rawValue) purchases or refunds in this range.", into: &document)
        }
        ratesSection(whole, periodNoun: "range", into: &document)
        storefrontSection(report.operators.wholeStorefronts, periodNoun: "range", into: &document)
        storeSection(whole, periodNoun: "range", into: &document)

        if report.periods.count >= 2 {
            document.heading(2, "Trend")
            trendSection(report.periods, into: &document)
        }

        grantsAndTestTraffic(whole, catalog: report.catalog, periodNoun: "range", into: &document)
        reconciliationSection(report, into: &document)
        document.footer(
            "Made by "
                + (monthCommand(report)
                    ?? "`shopledger report range --from \(first) --to \(last) --by \(noun) --tz \(zone) "
                    + "--commission \(commissionText(report))`") + "." + dataAsOfText(report))
    }

    // MARK: Shared pieces

    static func kindTitle(_ kind: ItemKind) -> String {
        switch kind {
        case .face: "Faces"
        case .background: "Backgrounds"
        }
    }

    /// Currencies with production lines in any of `periods`, by code.
    static func currencies(of periods: [PeriodFigures], book: String) -> [String] {
        Set(periods.flatMap { $0.currencies(in: book) }).sorted()
    }

    /// An amount the report writes: `1,234.50`.
    static func money(_ milli: Int64, _ currency: String) -> ReportText {
        .markup(CurrencyFormat.amount(milli, currency: currency, grouping: true))
    }

    static func count(_ value: Int) -> ReportText { .markup(CurrencyFormat.count(value)) }

    static func periodTable(firstColumn: ReportText) -> MarkdownTable {
        MarkdownTable([
            (firstColumn, .left), ("purchases", .right), ("gross", .right), ("refunds", .right), ("refunded", .right),
            ("reversed", .right), ("net revenue", .right), ("est. commission", .right), ("est. proceeds", .right),
            ("buyers", .right), ("first-time", .right),
        ])
    }

    static func periodRow(_ label: ReportText, _ line: RevenueFigures, _ currency: String) -> [ReportText] {
        [
            label, count(line.purchases), money(line.grossMilli, currency), count(line.refunds),
            money(line.refundedMilli, currency), money(line.reversedMilli, currency), money(line.netMilli, currency),
            money(line.commissionMilli, currency), money(line.proceedsMilli, currency), count(line.buyers),
            count(line.firstTimeBuyers),
        ]
    }

    /// One table per kind: a row per item and currency with the item's name, then the kind's total per currency.
    static func kindTable(
        _ kind: ItemKind, in figures: PeriodFigures, catalog: ReportCatalog, emptyText: ReportText,
        into document: inout some ReportDocument
    ) {
        var table = MarkdownTable([
            ("item", .left), ("product id", .left), ("currency", .left), ("purchases", .right), ("gross", .right),
            ("refunds", .right), ("refunded", .right), ("reversed", .right), ("net revenue", .right),
            ("est. commission", .right), ("est. proceeds", .right), ("buyers", .right), ("first-time", .right),
        ])
        for (key, line) in figures.sortedLines(in: LedgerBook.production) where key.kind == kind {
            let currency = key.currency
            let (name, productId): (ReportText, ReportText)
            if let index = key.index {
                let item = ItemID(kind: kind, index: index)
                (name, productId) = ("\(catalog.name(item)) (\(index))", .text(catalog.productId(item)))
            } else {
                (name, productId) = ("**All \(markup: kindTitle(kind).lowercased())**", "")
            }
            table.append([
                name, productId, .text(currency), count(line.purchases), money(line.grossMilli, currency),
                count(line.refunds),
                money(line.refundedMilli, currency), money(line.reversedMilli, currency),
                money(line.netMilli, currency),
                money(line.commissionMilli, currency), money(line.proceedsMilli, currency), count(line.buyers),
                count(line.firstTimeBuyers),
            ])
        }
        if table.isEmpty { document.paragraph(emptyText) } else { document.table(table) }
    }
}
