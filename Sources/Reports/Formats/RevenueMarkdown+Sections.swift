import CivilDates
import Ledger

extension RevenueMarkdown {
    // MARK: Headline (daily)

    /// Per production currency: the day's gross, refunds, net, proceeds and buyers beside the
    /// previous day and the average of the 7 days before the day.
    static func headline(_ report: RevenueReport, into document: inout some ReportDocument) {
        let trend = report.trend
        let day = trend[trend.count - 1]
        let previous = trend[trend.count - 2]
        let week = Array(trend[(trend.count - 8)..<(trend.count - 1)])
        let production = LedgerBook.production
        let currencies = currencies(of: [day, previous] + week, book: production)
        guard !currencies.isEmpty else {
            document.paragraph(
                "No production purchases or refunds on this day, the day before or the 7 days before it.")
            return
        }
        document.paragraph(
            "Each figure beside the day before (\(previous.period.first)) and the average of the 7 days before the day "
                + "(\(week.first!.period.first) to \(week.last!.period.first)); averages are rounded for display.")
        for currency in currencies {
            document.heading(3, .text(currency))
            var table = MarkdownTable([
                ("figure", .left), ("\(day.period.first)", .right), ("day before", .right), ("change", .right),
                ("7-day average", .right), ("change", .right),
            ])
            let today = day.total(book: production, currency: currency)
            let before = previous.total(book: production, currency: currency)
            let weekLines = week.map { $0.total(book: production, currency: currency) }
            let amounts: [(ReportText, KeyPath<RevenueFigures, Int64>)] = [
                ("gross", \.grossMilli), ("refunds", \.refundedMilli), ("net revenue", \.netMilli),
                ("est. proceeds", \.proceedsMilli),
            ]
            for (label, path) in amounts {
                let sum = weekLines.reduce(Int64(0)) { $0 + $1[keyPath: path] }
                let average = CurrencyFormat.roundedQuotient(sum, dividedBy: 7, currency: currency)
                table.append([
                    label, money(today[keyPath: path], currency), money(before[keyPath: path], currency),
                    change(today[keyPath: path], against: before[keyPath: path], over: 1),
                    money(average, currency), change(today[keyPath: path], against: sum, over: 7),
                ])
            }
            let counts: [(ReportText, KeyPath<RevenueFigures, Int>)] = [
                ("purchases", \.purchases), ("refunds (units)", \.refunds), ("buyers", \.buyers),
                ("first-time buyers", \.firstTimeBuyers),
            ]
            for (label, path) in counts {
                let sum = weekLines.reduce(0) { $0 + $1[keyPath: path] }
                table.append([
                    label, count(today[keyPath: path]), count(before[keyPath: path]),
                    change(Int64(today[keyPath: path]), against: Int64(before[keyPath: path]), over: 1),
                    tenths(Int64(sum), over: 7), change(Int64(today[keyPath: path]), against: Int64(sum), over: 7),
                ])
            }
            document.table(table)
        }
        if currencies.count > 1, let overall = day.buyersByBook[production] {
            document.paragraph(
                "Buyers in all currencies on the day: \(count(overall.buyers)) (\(count(overall.firstTime)) first-time)."
            )
        }
    }

    /// The change of `value` against the average `sum / days`, in percent with one decimal,
    /// rounded half away from zero; `new` when the base is zero and the value is not.
    static func change(_ value: Int64, against sum: Int64, over days: Int64) -> ReportText {
        guard sum != 0 else { return value == 0 ? "0%" : "new" }
        // (value − sum/days) / (sum/days) = (value·days − sum) / sum, in tenths of a percent.
        let numerator = (value * days - sum) * 1000
        let denominator = sum.magnitude
        let tenths = (numerator.magnitude + denominator / 2) / denominator
        let sign = numerator < 0 ? "-" : (tenths == 0 ? "" : "+")
        return .markup("\(sign)\(CurrencyFormat.count(Int(tenths / 10))).\(tenths % 10)%")
    }

    /// `sum / days` with one decimal, rounded half up (counts are never negative).
    static func tenths(_ sum: Int64, over days: Int64) -> ReportText {
        let tenths = (sum * 10 * 2 + days) / (days * 2)
        return .markup("\(CurrencyFormat.count(Int(tenths / 10))).\(tenths % 10)")
    }

    // MARK: Refunds (daily)

    static func refundsSection(_ report: RevenueReport, into document: inout some ReportDocument) {
        let day = report.whole
        let totals = day.currencies(in: LedgerBook.production).map {
            ($0, day.total(book: LedgerBook.production, currency: $0))
        }
        let refunds = totals.reduce(0) { $0 + $1.1.refunds }
        let reversals = totals.reduce(0) { $0 + $1.1.reversals }
        guard refunds + reversals > 0 else {
            document.paragraph("No production refunds or refund reversals were processed on this day.")
            return
        }
        let amounts = totals.filter { $0.1.refunds + $0.1.reversals > 0 }.map { currency, line in
            var parts: [ReportText] = []
            if line.refunds > 0 { parts.append("\(money(line.refundedMilli, currency)) \(currency) refunded") }
            if line.reversals > 0 { parts.append("\(money(line.reversedMilli, currency)) \(currency) reversed") }
            return parts.joined(separator: ", ")
        }
        document.paragraph(
            "\(count(refunds)) refund\(markup: refunds == 1 ? "" : "s") and \(count(reversals)) reversal\(markup: reversals == 1 ? "" : "s") "
                + "(\(amounts.joined(separator: "; "))). They count on this day because the store processed them on it, "
                + "whatever day the purchase was made.")
        var table = MarkdownTable([
            ("time (\(zoneText(report)))", .left), ("event", .left), ("transaction", .left), ("item", .left),
            ("amount", .right), ("purchased on", .left), ("reason", .left),
        ])
        for refund in report.refunds {
            let reason: ReportText
            switch refund.revocationReason {
            case nil: reason = ""
            case 0?: reason = "other"
            case 1?: reason = "app issue"
            case let code?: reason = "code \(code)"
            }
            table.append([
                .markup(refund.localTime), refund.isReversal ? "reversal" : "refund", .text(refund.transactionId),
                "\(report.catalog.name(refund.item)) (\(markup: refund.item.kind.rawValue) \(refund.item.index))",
                "\(money(refund.amount.amountMilli, refund.amount.currency)) \(refund.amount.currency)",
                .markup(refund.purchasedOn), reason,
            ])
        }
        if !table.isEmpty { document.table(table) }
        if refunds + reversals > report.refunds.count {
            document.paragraph(
                "Listed: the first \(count(report.refunds.count)) of \(count(refunds + reversals)), by time.")
        }
    }

    // MARK: Trend

    /// Per production currency: a Mermaid bar chart of net revenue (GitHub draws it) and the same
    /// figures as a table (for plain text).
    static func trendSection(_ periods: [PeriodFigures], into document: inout some ReportDocument) {
        let production = LedgerBook.production
        let currencies = currencies(of: periods, book: production)
        guard !currencies.isEmpty else {
            document.paragraph("No production purchases or refunds in these \(periods.count) periods.")
            return
        }
        let daily = periods.allSatisfy { $0.period.first == $0.period.last }
        let labels = periods.map { period -> String in
            let first = period.period.first
            return daily ? String(first.description.dropFirst(5)) : first.description
        }
        for currency in currencies {
            let lines = periods.map { $0.total(book: production, currency: currency) }
            let firstLabel = periods.first!.period.first
            let lastLabel = periods.last!.period.last
            document.heading(3, .text(currency))
            document.chart(
                ReportChart(
                    purpose: .trend, layout: .grouped,
                    title: "Net revenue (\(currency)), \(firstLabel) to \(lastLabel)",
                    currency: currency, categories: labels,
                    series: [
                        .init(name: "net revenue", values: lines.map(\.netMilli)),
                        .init(name: "refunds", values: lines.map(\.refundedMilli)),
                    ]))
            var table = MarkdownTable([
                (daily ? "date" : "period", .left), ("purchases", .right), ("gross", .right), ("net refunds", .right),
                ("net revenue", .right), ("est. proceeds", .right), ("buyers", .right),
            ])
            for (period, line) in zip(periods, lines) {
                table.append([
                    .markup(period.period.label), count(line.purchases), money(line.grossMilli, currency),
                    money(line.refundedMilli - line.reversedMilli, currency), money(line.netMilli, currency),
                    money(line.proceedsMilli, currency), count(line.buyers),
                ])
            }
            document.table(table)
        }
        document.chart(buyersChart(periods, labels: labels))
    }

    /// First-time and returning production buyers (over all currencies) per period.
    static func buyersChart(_ periods: [PeriodFigures], labels: [String]) -> ReportChart {
        let counts = periods.map { $0.buyersByBook[LedgerBook.production] ?? BuyerCounts() }
        return ReportChart(
            purpose: .buyers, layout: .stacked,
            title: "First-time and returning buyers, \(periods.first!.period.first) to \(periods.last!.period.last)",
            currency: nil, categories: labels,
            series: [
                .init(name: "first-time buyers", values: counts.map { Int64($0.firstTime) }),
                .init(name: "returning buyers", values: counts.map { Int64($0.buyers - $0.firstTime) }),
            ])
    }

    /// Production units bought per item over `figures`' period, all currencies together, in catalog order.
    static func unitsChart(_ figures: PeriodFigures, catalog: ReportCatalog, periodText: String) -> ReportChart {
        var units: [ItemID: Int] = [:]
        for (key, line) in figures.sortedLines(in: LedgerBook.production) where key.level == .item {
            guard let kind = key.kind, let index = key.index else { continue }
            units[ItemID(kind: kind, index: index), default: 0] += line.purchases
        }
        let items = units.keys.sorted {
            (ReportOrder.kind($0.kind), $0.index) < (ReportOrder.kind($1.kind), $1.index)
        }
        return ReportChart(
            purpose: .units, layout: .horizontal, title: "Units bought per item, \(periodText)", currency: nil,
            categories: items.map { "\(catalog.name($0)) (\($0.kind.rawValue) \($0.index))" },
            series: [.init(name: "units bought", values: items.map { Int64(units[$0]!) })])
    }

    // MARK: Grants and test traffic

    static func grantsAndTestTraffic(
        _ figures: PeriodFigures, catalog: ReportCatalog, periodNoun: String, into document: inout some ReportDocument
    ) {
        document.heading(2, "Grants without revenue")
        var grants = MarkdownTable([
            ("item", .left), ("family-shared grants", .right), ("family-shared revokes", .right),
            ("unpriced purchases", .right),
        ])
        for (key, line) in figures.sortedGrants(in: LedgerBook.production) {
            grants.append([
                "\(catalog.name(key.item)) (\(markup: key.item.kind.rawValue) \(key.item.index))",
                count(line.familyShared),
                count(line.familyRevokes), count(line.unpriced),
            ])
        }
        if grants.isEmpty {
            document.paragraph("No family-shared or unpriced production purchases in this \(markup: periodNoun).")
        } else {
            document.paragraph(
                "Items given through Family Sharing (the organiser paid once) or bought without a price from the store: counted here, never as revenue."
            )
            document.table(grants)
        }

        var support = MarkdownTable([
            ("item", .left), ("granted by support", .right), ("revoked by support", .right),
        ])
        for (key, line) in figures.sortedGrants(in: SupportAction.book) {
            support.append([
                "\(catalog.name(key.item)) (\(markup: key.item.kind.rawValue) \(key.item.index))",
                count(line.supportGrants),
                count(line.supportRevokes),
            ])
        }
        if !support.isEmpty {
            document.paragraph(
                "Items support granted to users as compensation (book `promotional`: owned, never revenue), and such "
                    + "grants revoked, in this \(markup: periodNoun):")
            document.table(support)
        }

        document.heading(2, "Test traffic (not revenue)")
        let books = figures.books.filter { $0 != LedgerBook.production && $0 != SupportAction.book }
        guard !books.isEmpty else {
            document.paragraph("No sandbox, Xcode or stub activity in this \(markup: periodNoun).")
            return
        }
        document.paragraph(
            "Purchases in sandbox, Xcode, local testing and stub books: what testers did, kept out of every figure above."
        )
        var table = MarkdownTable([
            ("book", .left), ("currency", .left), ("purchases", .right), ("gross", .right), ("refunds", .right),
            ("refunded", .right), ("net", .right), ("buyers", .right), ("grants without revenue", .right),
        ])
        for book in books {
            for currency in figures.currencies(in: book) {
                let line = figures.total(book: book, currency: currency)
                table.append([
                    .text(book), .text(currency), count(line.purchases), money(line.grossMilli, currency),
                    count(line.refunds), money(line.refundedMilli, currency), money(line.netMilli, currency),
                    count(line.buyers), "",
                ])
            }
            let granted = figures.sortedGrants(in: book).reduce(0) {
                $0 + $1.figures.familyShared + $1.figures.unpriced
            }
            if granted > 0 { table.append([.text(book), "", "", "", "", "", "", "", count(granted)]) }
        }
        document.table(table)
    }

    // MARK: Reconciliation

    static func reconciliationSection(_ report: RevenueReport, into document: inout some ReportDocument) {
        document.heading(2, "Reconciliation")
        var lines: [ReportText] = []
        for check in report.reconciliation {
            // The checks' names, summaries and what they examined are ours; a failure's id and detail
            // come from the rows at fault.
            var line: ReportText =
                "\(markup: check.passed ? "PASS" : "**FAIL**") `\(markup: check.name)`: \(markup: check.summary) "
                + "Examined \(count(check.examined)) \(markup: check.examinedWhat)"
            line += check.passed ? "." : "; \(count(check.failureCount)) failed:"
            for failure in check.failures { line += "\n  - \(code: failure.id): \(failure.detail)" }
            if check.failureCount > check.failures.count {
                line += "\n  - … and \(count(check.failureCount - check.failures.count)) more"
            }
            lines.append(line)
        }
        document.bullets(lines)
        if report.options.reconciliation == .period {
            document.paragraph(
                "Only this report's period was reconciled. `shopledger reconcile` checks every ledger invariant over all "
                    + "of history (or make the report with `--reconcile full`).")
        }
    }
}
