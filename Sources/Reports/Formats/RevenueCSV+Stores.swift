/// The CSV's revenue rows per store (issue 43): after a period's rows over all stores (and its
/// grants), the same rows for each store that had revenue lines, book by book (production first),
/// store by store (App Store, Google Play, then any other): `level` `store_item`, `store_kind` and `store_currency`, and
/// column `store` the ledger's code (`app_store`, `google_play`). Their own levels, so a filter on
/// `level` keeps every all-store sum as it was; a period's `store_currency` rows of a book and
/// currency add up to its `currency` row (units, amounts, commission, proceeds). Buyers are counted
/// per store: a user who bought in both stores counts in each, so they do not add up.
extension RevenueCSV {
    /// `store_item`, `store_kind`, `store_currency`: the levels of the rows per store.
    public static func storeLevel(_ level: RevenueLineKey.Level) -> String { "store_\(level.rawValue)" }

    static func storeRecords(_ report: RevenueReport, _ figures: PeriodFigures) -> [[CSVField]] {
        var rows: [[CSVField]] = []
        for book in figures.books {
            for store in figures.stores(in: book) {
                for (key, line) in figures.sortedLines(store: store, in: book) {
                    rows.append(
                        revenueRow(report, period: figures.period, key: key, level: storeLevel(key.level), line: line)
                            + operatorFields(line, currency: key.currency, store: store))
                }
            }
        }
        return rows
    }
}
