import CivilDates
import Crypto

/// Reads Apple's daily Summary Sales Report: tab-separated UTF-8 text, the first line a header.
///
/// Columns are found by their header name, never by position: versions 1_0 to 1_3 add columns, and
/// only the columns the import uses are required (`requiredColumns`). Any problem refuses the whole
/// file, naming the line and the column (1-based, by header name). Every bound an input could drive
/// (bytes, line length, rows, columns, field length) is checked (`SummarySalesLimits`).
public struct SummarySalesParser: Sendable {
    /// The columns the import stores and compares; a file without one of them is refused.
    public static let requiredColumns = [
        "SKU", "Product Type Identifier", "Units", "Developer Proceeds", "Begin Date", "End Date",
        "Customer Currency", "Country Code", "Currency of Proceeds", "Customer Price",
    ]

    /// Columns whose presence marks a newer version, newest first (docs/finance.md says how sure this is).
    static let versionMarkers: [(column: String, version: String)] = [
        ("Order Type", "1_3"), ("Client", "1_2"), ("Proceeds Reason", "1_1"),
    ]

    /// The longest field stored (Apple's own widths: SKU 2,000 characters, Title 4,000).
    static let maximumFieldBytes = 8000
    /// The most units one row may state, either sign.
    static let maximumUnits = 10_000_000
    /// The most the file's rows may add up to, Σ |Units × Customer Price| in milliunits of any
    /// currencies: every sum the comparison makes in bigint stays far from overflowing.
    static let maximumTotalMilli: Int64 = 1_000_000_000_000_000_000
    /// Years a report's date may name (PostgreSQL's date has no year 0; Apple's reports began in 2008).
    static let years = 2000...9999

    public let limits: SummarySalesLimits

    public init(limits: SummarySalesLimits = .standard) {
        self.limits = limits
    }

    /// Parses a file's bytes, gzip'd (detected by its magic bytes) or plain.
    public func parse(_ bytes: [UInt8]) throws(AppleSalesError) -> SummarySalesReport {
        guard bytes.count <= limits.maximumFileBytes else {
            throw AppleSalesError(.tooLarge, "the file is \(bytes.count) bytes; at most \(limits.maximumFileBytes)")
        }
        let text = Gzip.isGzip(bytes) ? try Gzip.inflate(bytes, maximumBytes: limits.maximumUncompressedBytes) : bytes
        guard text.count <= limits.maximumUncompressedBytes else {
            throw AppleSalesError(
                .tooLarge, "the report is \(text.count) bytes; at most \(limits.maximumUncompressedBytes)")
        }
        return try parseText(text)
    }

    /// Parses the uncompressed text.
    func parseText(_ text: [UInt8]) throws(AppleSalesError) -> SummarySalesReport {
        var lines = try splitLines(text)
        // Trailing empty lines (a final newline, a blank line at the end) are not rows.
        while let last = lines.last, last.bytes.isEmpty { lines.removeLast() }
        guard let headerLine = lines.first else { throw AppleSalesError(.malformed, "the file is empty") }
        let header = try decode(headerLine.bytes, line: 1).split(separator: "\t", omittingEmptySubsequences: false)
            .map { String($0).trimmed }
        guard header.count <= limits.maximumColumns else {
            throw AppleSalesError(
                .tooLarge, "the header has \(header.count) columns; at most \(limits.maximumColumns)", line: 1)
        }
        var index: [String: Int] = [:]
        for (position, name) in header.enumerated() {
            guard !name.isEmpty else {
                throw AppleSalesError(.malformed, "column \(position + 1) of the header has no name", line: 1)
            }
            guard index[name] == nil else {
                throw AppleSalesError(.malformed, "the header names the column '\(name)' twice", line: 1)
            }
            index[name] = position
        }
        let missing = Self.requiredColumns.filter { index[$0] == nil }
        guard missing.isEmpty else {
            throw AppleSalesError(
                .malformed,
                "the header lacks the required column\(missing.count == 1 ? "" : "s") "
                    + missing.map { "'\($0)'" }.joined(separator: ", ")
                    + " (is this a Summary Sales Report?)", line: 1, column: missing[0])
        }
        let dataLines = lines.dropFirst()
        guard !dataLines.isEmpty else {
            throw AppleSalesError(.malformed, "the report has a header and no rows: its day is unknown", line: 2)
        }
        guard dataLines.count <= limits.maximumRows else {
            throw AppleSalesError(.tooLarge, "the report has \(dataLines.count) rows; at most \(limits.maximumRows)")
        }
        var rows: [SummarySalesRow] = []
        rows.reserveCapacity(dataLines.count)
        var reportDate: CalendarDate?
        var provider: String?
        var providerCountry: String?
        var total: Int64 = 0
        for line in dataLines {
            let fields = try decode(line.bytes, line: line.number).split(
                separator: "\t", omittingEmptySubsequences: false)
            let reader = FieldReader(fields: fields, header: header, index: index, line: line.number)
            guard fields.count == header.count else {
                throw AppleSalesError(
                    .malformed, "the line has \(fields.count) fields; the header has \(header.count)",
                    line: line.number)
            }
            let begin = try reader.date("Begin Date")
            let end = try reader.date("End Date")
            guard begin == end else {
                throw reader.error(
                    "End Date", "\(end) is not the Begin Date \(begin): a daily report covers one day")
            }
            if let reportDate, reportDate != begin {
                throw reader.error(
                    "Begin Date", "\(begin) differs from the earlier rows' \(reportDate): a daily report has one date")
            }
            reportDate = begin
            if line.number == 2 {
                provider = try reader.optional("Provider")
                providerCountry = try reader.optional("Provider Country")
            }
            let units = try reader.units("Units")
            let price = try reader.amount("Customer Price")
            let (rowTotal, overflow) = Int64(units.magnitude).multipliedReportingOverflow(by: Int64(price.magnitude))
            guard !overflow, rowTotal <= Self.maximumTotalMilli - total else {
                throw reader.error(
                    "Units", "the rows' Units × Customer Price add up past \(Self.maximumTotalMilli) milliunits")
            }
            total += rowTotal
            rows.append(
                SummarySalesRow(
                    line: line.number, sku: try reader.required("SKU"), title: try reader.optional("Title"),
                    productType: try reader.required("Product Type Identifier"),
                    units: units, customerPriceMilli: price,
                    customerCurrency: try reader.code("Customer Currency", length: 3),
                    countryCode: try reader.code("Country Code", length: 2),
                    developerProceedsMilli: try reader.amount("Developer Proceeds"),
                    proceedsCurrency: try reader.code("Currency of Proceeds", length: 3),
                    appleIdentifier: try reader.optional("Apple Identifier"),
                    parentIdentifier: try reader.optional("Parent Identifier"),
                    promoCode: try reader.optional("Promo Code"), version: try reader.optional("Version")))
        }
        guard let reportDate else { throw AppleSalesError(.malformed, "the report has no rows") }
        let version = Self.versionMarkers.first { index[$0.column] != nil }?.version ?? "1_0"
        return SummarySalesReport(
            date: reportDate, formatVersion: version, columns: header, provider: provider,
            providerCountry: providerCountry, rows: rows, uncompressedBytes: text.count,
            sha256: Array(SHA256.hash(data: text)))
    }

    struct Line {
        let number: Int
        let bytes: ArraySlice<UInt8>
    }

    /// Lines split at LF (a CR before it dropped), each within the length bound.
    func splitLines(_ text: [UInt8]) throws(AppleSalesError) -> [Line] {
        var lines: [Line] = []
        var start = 0
        var number = 1
        for position in 0...text.count {
            guard position == text.count || text[position] == UInt8(ascii: "\n") else { continue }
            var end = position
            if end > start, text[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            guard end - start <= limits.maximumLineBytes else {
                throw AppleSalesError(
                    .tooLarge, "the line is \(end - start) bytes; at most \(limits.maximumLineBytes)", line: number)
            }
            // The last "line" after a final newline is empty and not a line of the file.
            if position < text.count || start < text.count {
                lines.append(Line(number: number, bytes: text[start..<end]))
            }
            guard lines.count <= limits.maximumRows + 1 else {
                throw AppleSalesError(.tooLarge, "the report has more than \(limits.maximumRows) rows")
            }
            start = position + 1
            number += 1
        }
        return lines
    }

    /// The line as text: valid UTF-8 without NUL (PostgreSQL's text refuses NUL).
    func decode(_ bytes: ArraySlice<UInt8>, line: Int) throws(AppleSalesError) -> String {
        guard !bytes.contains(0) else { throw AppleSalesError(.malformed, "the line contains a NUL byte", line: line) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw AppleSalesError(.malformed, "the line is not valid UTF-8", line: line)
        }
        // A byte order mark before the header is not part of the first column's name.
        return line == 1 && text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
    }
}

/// Reads one row's fields by header name, each refusal naming the line and the column.
struct FieldReader {
    let fields: [Substring]
    let header: [String]
    let index: [String: Int]
    let line: Int

    func error(_ column: String, _ message: String) -> AppleSalesError {
        AppleSalesError(.malformed, message, line: line, column: column, columnNumber: index[column].map { $0 + 1 })
    }

    /// The field trimmed, nil when the file has no such column or the field is empty.
    func optional(_ column: String) throws(AppleSalesError) -> String? {
        guard let position = index[column], position < fields.count else { return nil }
        let value = String(fields[position]).trimmed
        guard value.utf8.count <= SummarySalesParser.maximumFieldBytes else {
            throw error(
                column, "the field is \(value.utf8.count) bytes; at most \(SummarySalesParser.maximumFieldBytes)")
        }
        return value.isEmpty ? nil : value
    }

    func required(_ column: String) throws(AppleSalesError) -> String {
        guard let value = try optional(column) else { throw error(column, "the field is empty") }
        return value
    }

    /// MM/DD/YYYY, as Apple writes Begin Date and End Date.
    func date(_ column: String) throws(AppleSalesError) -> CalendarDate {
        let text = try required(column)
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 2, parts[1].count == 2, parts[2].count == 4,
            parts.allSatisfy({ $0.utf8.allSatisfy(Milliunits.isDigit) }),
            let month = Int(parts[0]), let day = Int(parts[1]), let year = Int(parts[2]),
            SummarySalesParser.years.contains(year), let date = CalendarDate(year: year, month: month, day: day)
        else {
            throw error(
                column, "'\(text)' is not a date MM/DD/YYYY (years \(SummarySalesParser.years.lowerBound) to 9999)")
        }
        return date
    }

    /// A whole number of units, either sign (refunds are negative).
    func units(_ column: String) throws(AppleSalesError) -> Int {
        let text = try required(column)
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.count <= 9, digits.utf8.allSatisfy(Milliunits.isDigit), let value = Int(text)
        else { throw error(column, "'\(text)' is not a whole number of units") }
        guard abs(value) <= SummarySalesParser.maximumUnits else {
            throw error(column, "\(value) units is past the bound of \(SummarySalesParser.maximumUnits)")
        }
        return value
    }

    /// A decimal amount with at most 3 decimals, as milliunits.
    func amount(_ column: String) throws(AppleSalesError) -> Int64 {
        let text = try required(column)
        switch Milliunits.parse(Substring(text)) {
        case .success(let milli): return milli
        case .failure(let refusal): throw error(column, refusal.reason)
        }
    }

    /// An upper-case ASCII code of `length` letters (ISO 4217 currency, ISO 3166-1 alpha-2 country).
    func code(_ column: String, length: Int) throws(AppleSalesError) -> String {
        let text = try required(column)
        guard text.utf8.count == length, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
        else { throw error(column, "'\(text)' is not a code of \(length) capital letters") }
        return text
    }
}

extension String {
    var trimmed: String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
