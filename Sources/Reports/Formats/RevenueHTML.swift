/// The report as one self-contained HTML page for the people who run the shop: the Markdown
/// report's sections and figures (written once, in `RevenueMarkdown`) with its charts drawn as
/// inline SVG, then every figure of the CSV in a table a program can read back (`data-column`).
/// Nothing in it depends on when it was made, so the same ledger gives the same bytes.
public enum RevenueHTML {
    public static func render(_ report: RevenueReport) -> String {
        var document = HTMLDocument()
        let title: String
        switch report.kind {
        case .daily(let date):
            title = "Revenue report for \(date) (\(report.options.timeZone))"
            RevenueMarkdown.daily(report, date: date, into: &document)
        case .range(let first, let last, let grouping):
            title =
                RevenueMarkdown.monthTitle(report)
                ?? "Revenue report for \(first) to \(last) by \(grouping.rawValue) (\(report.options.timeZone))"
            RevenueMarkdown.range(report, first: first, last: last, grouping: grouping, into: &document)
        }
        document.figuresTable(columns: RevenueCSV.columns, rows: RevenueCSV.records(report).map { $0.map(\.value) })
        return document.page(title: title)
    }
}
