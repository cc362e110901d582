import Foundation

/// The files a report is written as.
public enum ReportFormat: String, Sendable, CaseIterable {
    case csv
    case md
    case html

    public var fileName: String { "revenue.\(rawValue)" }

    /// What `report` writes when no format is named.
    public static let defaults: [ReportFormat] = [.csv, .md, .html]

    /// Parses `csv,md,html`, `md`, ...: each format once, known ones only.
    public static func list(_ text: String) throws -> [ReportFormat] {
        var formats: [ReportFormat] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: .whitespaces).lowercased()
            guard let format = ReportFormat(rawValue: name == "markdown" ? "md" : name) else {
                throw ReportError(
                    .invalidInput, "unknown format '\(part)'; use csv, md, html or a list such as csv,md,html")
            }
            if !formats.contains(format) { formats.append(format) }
        }
        return formats
    }

    public func render(_ report: RevenueReport) -> String {
        switch self {
        case .csv: RevenueCSV.render(report)
        case .md: RevenueMarkdown.render(report)
        case .html: RevenueHTML.render(report)
        }
    }
}
