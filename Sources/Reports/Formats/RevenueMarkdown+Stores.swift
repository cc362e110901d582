import Ledger

/// The "By store" section (issue 43): production revenue per store (App Store, Google Play) in each
/// currency, beside the all-store total the rest of the report shows, and each store's purchases
/// recorded without a price. Written once for Markdown and HTML, like the other sections.
extension RevenueMarkdown {
    static func storeSection(_ figures: PeriodFigures, periodNoun: String, into document: inout some ReportDocument) {
        document.heading(2, "By store")
        let production = LedgerBook.production
        let currencies = figures.currencies(in: production)
        if currencies.isEmpty {
            document.paragraph("No production purchases or refunds in this \(periodNoun).")
        } else {
            document.paragraph(
                "Production revenue per store: what was bought and refunded through the App Store and through Google "
                    + "Play, counted as everywhere in this report (a refund or reversal in the store of the purchase "
                    + "it refunds, on the day the store processed it). Each currency's stores add up to its total, "
                    + "except buyers: a user who bought in both stores counts in each. Per item in the CSV (levels "
                    + "`store_item`, `store_kind`, `store_currency`).")
        }
        let stores = figures.stores(in: production)
        for currency in currencies {
            document.heading(3, .text(currency))
            var table = periodTable(firstColumn: "store")
            for store in stores {
                let line = figures.total(book: production, currency: currency, store: store)
                guard !line.isEmpty else { continue }
                table.append(periodRow(.text(ReportStore.name(store)), line, currency))
            }
            table.append(periodRow("**All stores**", figures.total(book: production, currency: currency), currency))
            document.table(table)
        }
        let unpriced = (figures.unpricedByStore[production] ?? [:]).filter { $0.value > 0 }
        if !unpriced.isEmpty {
            let counts = unpriced.keys.sorted { ReportStore.order($0) < ReportStore.order($1) }.map {
                "\(ReportStore.name($0)) \(CurrencyFormat.count(unpriced[$0]!))"
            }
            document.paragraph(
                "Production purchases recorded without a price in this \(periodNoun), per store (grants, not revenue, "
                    + "until their price is learned; Google Play's purchases are recorded so): "
                    + "\(markup: counts.joined(separator: ", ")).")
        }
    }
}
