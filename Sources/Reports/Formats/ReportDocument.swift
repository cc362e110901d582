/// What the report's sections write into: Markdown (`MarkdownDocument`) or HTML (`HTMLDocument`).
/// The sections (`RevenueMarkdown`) are written once; texts use Markdown's inline marks
/// (`**strong**`, `` `code` ``), which the HTML document turns into elements after escaping.
protocol ReportDocument {
    mutating func heading(_ level: Int, _ text: String)
    mutating func paragraph(_ text: String)
    mutating func bullets(_ items: [String])
    mutating func table(_ table: MarkdownTable)
    mutating func chart(_ chart: ReportChart)
    mutating func footer(_ text: String)
}
