import CivilDates

extension RevenueMarkdown {
    // MARK: In the reporting currency

    /// "In USD": the production totals of every currency converted to the reporting currency, one
    /// chart over the trend in it, how and at which rates they were converted. Nothing without
    /// `--reporting-currency` (the report's bytes stay as they were).
    static func reportingCurrencySection(_ report: RevenueReport, into document: inout some ReportDocument) {
        guard let converted = report.converted else { return }
        let currency = converted.currency
        let rates = converted.rates
        document.heading(2, "In \(currency)")
        // The rates file's name is the operator's: code from outside.
        let source: ReportText
        switch rates.source {
        case .table: source = "rates per \(currency) from \(code: rates.fileName)"
        case .ecb:
            source =
                currency == "EUR"
                ? "the ECB's euro reference rates from \(code: rates.fileName)"
                : "the ECB's euro reference rates from \(code: rates.fileName), crossed through the euro "
                    + "(X per \(currency) = X per EUR ÷ \(currency) per EUR, exactly)"
        }
        document.paragraph(
            "Production revenue in every currency, converted to \(currency) with \(source): converted per day at "
                + "that day's rate (the day in \(zoneText(report))), or the last earlier day's when the file "
                + "has none for it; each day's gross, refunds, reversals and est. commission in each currency is "
                + "divided by the rate exactly and rounded once per day and currency, half to even, to a thousandth "
                + "of \(currency). Periods are sums of their days, and net revenue and est. proceeds are made from "
                + "the converted sums, so the \(currency) figures add up. Units and buyers are counted over all "
                + "currencies, not converted. The per-currency figures elsewhere in this report are unchanged.")

        let daily: Bool
        if case .daily = report.kind { daily = true } else { daily = false }
        var table = periodTable(firstColumn: daily ? "date" : "period")
        let periods = daily ? report.trend : report.periods
        for (figures, line) in zip(periods, converted.trend) {
            table.append(periodRow(.markup(figures.period.label), line, currency))
        }
        if !daily && report.periods.count > 1 { table.append(periodRow("**Whole range**", converted.whole, currency)) }

        if periods.count >= 2 {
            let labels = periods.map { period -> String in
                daily ? String(period.period.first.description.dropFirst(5)) : period.period.first.description
            }
            document.chart(
                ReportChart(
                    purpose: .trend, layout: .grouped,
                    title: "Net revenue (\(currency), all currencies converted), \(periods.first!.period.first) to "
                        + "\(periods.last!.period.last)",
                    currency: currency, categories: labels,
                    series: [
                        .init(name: "net revenue", values: converted.trend.map(\.netMilli)),
                        .init(name: "refunds", values: converted.trend.map(\.refundedMilli)),
                    ]))
        }
        if daily {
            document.paragraph(
                "The day is the last row; the \(periods.count) days before and including it are the trend.")
        }
        document.table(table)

        if daily, case .daily(let date) = report.kind {
            let rows = converted.used.filter { $0.day == date && $0.currency != currency }
            if !rows.isEmpty {
                var used = MarkdownTable([
                    ("currency", .left), ("units per \(currency)", .right), ("rate of", .left),
                ])
                for row in rows { used.append([.text(row.currency), .markup(row.rate.rate.text), "\(row.rate.date)"]) }
                document.paragraph("Rates used for \(date):")
                document.table(used)
            }
        }
        document.paragraph(.markup(fallbackText(converted)))
    }

    /// The days converted at an earlier day's rate, runs of consecutive days with the same currencies
    /// and rate date written once: `2026-11-07 – 2026-11-08: JPY, KRW at the rates of 2026-11-06`.
    static func fallbackText(_ converted: ConvertedFigures) -> String {
        guard !converted.fallbacks.isEmpty else {
            return "Every day and currency converted had a rate of its own day in the file."
        }
        var byDay: [(day: CalendarDate, currencies: [String], rateDates: [CalendarDate])] = []
        for fallback in converted.fallbacks {
            if let last = byDay.last, last.day == fallback.day {
                byDay[byDay.count - 1].currencies.append(fallback.currency)
                byDay[byDay.count - 1].rateDates.append(fallback.rateDate)
            } else {
                byDay.append((fallback.day, [fallback.currency], [fallback.rateDate]))
            }
        }
        var runs: [(first: CalendarDate, last: CalendarDate, currencies: [String], rateDates: [CalendarDate])] = []
        for entry in byDay {
            if let last = runs.last, last.last.adding(days: 1) == entry.day, last.currencies == entry.currencies,
                last.rateDates == entry.rateDates
            {
                runs[runs.count - 1].last = entry.day
            } else {
                runs.append((entry.day, entry.day, entry.currencies, entry.rateDates))
            }
        }
        let items = runs.map { run -> String in
            let days = run.first == run.last ? "\(run.first)" : "\(run.first) – \(run.last)"
            let rateDates = Set(run.rateDates)
            let from =
                rateDates.count == 1
                ? "\(run.rateDates[0])"
                : zip(run.currencies, run.rateDates).map { "\($1) (\($0))" }.joined(separator: ", ")
            return "\(days): \(run.currencies.joined(separator: ", ")) at the rate of \(from)"
        }
        return "Converted at an earlier day's rate (the file has none for the day): " + items.joined(separator: "; ")
            + "."
    }
}
