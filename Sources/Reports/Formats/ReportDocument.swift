/// What the report's sections write into: Markdown (`MarkdownDocument`) or HTML (`HTMLDocument`).
/// The sections (`RevenueMarkdown`) are written once; texts are `ReportText`s: the report's own
/// Markdown inline marks (`**strong**`, `` `code` ``), which the HTML document turns into elements
/// after escaping, and text from outside (names, ids), which each document writes as text only.
protocol ReportDocument {
    mutating func heading(_ level: Int, _ text: ReportText)
    mutating func paragraph(_ text: ReportText)
    mutating func bullets(_ items: [ReportText])
    mutating func table(_ table: MarkdownTable)
    mutating func chart(_ chart: ReportChart)
    mutating func footer(_ text: ReportText)
}
