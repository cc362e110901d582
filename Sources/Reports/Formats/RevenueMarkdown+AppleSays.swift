import AppleSales
import CivilDates
import Postgres

extension RevenueReport {
    /// The daily report with Apple's Summary Sales Report of the same calendar date compared in
    /// `connection`'s snapshot (nil when none was imported; a range report is returned as it is).
    func addingAppleSays(on connection: PostgresConnection) async throws -> RevenueReport {
        guard case .daily(let date) = kind else { return self }
        var report = self
        report.appleSays = try await AppleSalesComparer.compare(date: date, on: connection)
        return report
    }
}

extension RevenueMarkdown {
    // MARK: Apple says (daily)

    /// Apple's own report of the day beside the ledger, when one was imported (docs/finance.md). The
    /// report's day is in `--tz`; Apple's is always a Pacific-time day: the section says which of
    /// Apple's days it compares (the same calendar date), so the two are never silently mixed.
    static func appleSaysSection(_ report: RevenueReport, into document: inout some ReportDocument) {
        guard let apple = report.appleSays else { return }
        document.heading(2, "Apple says")
        let zone = report.options.timeZone
        // The file's name is the operator's (and may hold anything but `/`): code from outside.
        var scope: ReportText =
            "Apple's Summary Sales Report for **\(apple.date) Pacific time** (\(markup: AppleSalesComparison.timeZone), "
            + "\(markup: apple.startsAtUTC) to \(markup: apple.endsAtUTC) UTC; report \(apple.reportId), "
            + "\(code: apple.fileName)) against "
            + "the ledger's production purchases, refunds and reversals of that same Pacific day, per product, country "
            + "and currency (units and customer prices)."
        if zone != AppleSalesComparison.timeZone {
            scope +=
                " This report's day is \(apple.date) in \(zoneText(report)): the same calendar date, not the same hours, so these "
                + "figures are not the ones above."
        }
        document.paragraph(scope)
        document.bullets([
            "**Matched:** \(count(apple.matched.count))",
            "**Discrepancies:** \(count(apple.discrepancies.count))"
                + (apple.passed ? " (the ledger agrees with Apple)" : ""),
        ])
        if !apple.discrepancies.isEmpty {
            var table = MarkdownTable([
                ("product", .left), ("country", .left), ("currency", .left), ("Apple units", .right),
                ("ledger units", .right), ("Apple customer price", .right), ("ledger customer price", .right),
                ("meaning", .left),
            ])
            // Apple's SKUs, countries and currencies, and the ledger's storefronts: text from outside.
            for line in apple.discrepancies {
                table.append([
                    .text(line.product), .text(line.country), .text(line.currency), "\(line.appleUnits)",
                    "\(line.ledgerUnits)",
                    money(line.appleCustomerPriceMilli, line.currency),
                    money(line.ledgerCustomerPriceMilli, line.currency), meaning(line.kind),
                ])
            }
            document.table(table)
        }
        var notes: [ReportText] = []
        if !apple.uncompared.isEmpty {
            let types = apple.uncompared.map { uncompared -> ReportText in
                "\(uncompared.productType) \(count(uncompared.rows)) rows"
            }
            notes.append("Not compared: " + types.joined(separator: ", ") + " (IA3 rows are restores, not sales).")
        }
        if apple.unpricedLedgerPurchases > 0 {
            notes.append("\(count(apple.unpricedLedgerPurchases)) ledger purchases of the day have no price yet.")
        }
        if !notes.isEmpty { document.paragraph(notes.joined(separator: " ")) }
    }

    static func meaning(_ kind: AppleSalesComparison.Line.Kind) -> ReportText {
        switch kind {
        case .matched: "agree"
        case .appleOnly: "Apple sold, we never recorded (money lost?)"
        case .ledgerOnly: "we recorded, Apple never sold (investigate)"
        case .differs: "both have it, figures differ"
        case .unmappedStorefront: "storefront with no country code"
        }
    }
}
