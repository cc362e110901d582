/// A chart of report figures, built once by the sections from the figures the tables show: the
/// HTML report draws it as inline SVG; the Markdown report draws the trend as Mermaid and leaves
/// the other charts to its tables.
struct ReportChart: Sendable, Hashable {
    enum Purpose: Sendable, Hashable {
        /// Net revenue and refunds of one currency per period.
        case trend
        /// Units bought per item.
        case units
        /// First-time and returning buyers per period.
        case buyers
    }

    enum Layout: Sendable, Hashable {
        /// Vertical bars, one per series side by side in each category.
        case grouped
        /// Vertical bars, the series stacked.
        case stacked
        /// Horizontal bars, one series, for long category names.
        case horizontal
    }

    struct Series: Sendable, Hashable {
        let name: String
        let values: [Int64]
    }

    let purpose: Purpose
    let layout: Layout
    let title: String
    /// What the axis counts: a currency code (values are milliunits of it) or nil (values are counts).
    let currency: String?
    let categories: [String]
    let series: [Series]

    /// A value as people read it: `2,500` KRW, `0.99` USD, `12` units.
    func label(_ value: Int64) -> String {
        guard let currency else { return CurrencyFormat.count(Int(value)) }
        return CurrencyFormat.amount(value, currency: currency, grouping: true)
    }
}
