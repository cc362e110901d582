import CivilDates

/// The exchange rates a report converts with, read from a rates file: per currency, its rate (units
/// of the currency per unit of the reporting currency) on each day the file gives one.
///
/// Two file formats, told apart by the header line:
/// - ours, `date,currency,rate_per_unit_of_reporting_currency`: one row per day and currency
///   (`2026-11-02,KRW,1391.25` when the reporting currency is USD); the reporting currency itself
///   needs no row (its rate is 1; a row for it must say 1);
/// - the European Central Bank's euro reference rates (`eurofxref-hist.csv`): header
///   `Date,USD,JPY,BGN,…,ZAR,` (a trailing comma, so the last column is empty), one row per
///   working day, newest first (`2026-11-02,1.1617,175.43,…,`), units of each currency per euro,
///   `N/A` (or an empty field) for a currency not quoted that day. With a reporting currency other
///   than EUR each rate is crossed through the euro, exactly: X per R = (X per EUR) / (R per EUR),
///   on the days both are quoted.
public struct FXRates: Sendable, Hashable {
    public enum Source: String, Sendable, Hashable {
        /// `date,currency,rate_per_unit_of_reporting_currency`.
        case table
        /// The ECB's euro reference rates, crossed through EUR.
        case ecb
    }

    /// One day's rate of a currency.
    public struct DatedRate: Sendable, Hashable {
        public let date: CalendarDate
        public let rate: ExactRate
    }

    /// File bounds: a rates file is read whole, so it is bounded before it is parsed.
    public static let maximumBytes = 32 << 20
    public static let maximumLines = 500_000
    public static let maximumLineBytes = 4096
    public static let maximumColumns = 256

    public static let tableHeader = "date,currency,rate_per_unit_of_reporting_currency"

    /// The currency the rates are per unit of (a 3-letter code).
    public let reportingCurrency: String
    public let source: Source
    /// The file's name as the operator gave it, for the report and for errors.
    public let fileName: String
    /// Per currency, its rates oldest first, one per date: per unit of the reporting currency, or
    /// (``crossesThroughEuro``) per euro as the ECB's file gives them.
    let rates: [String: [DatedRate]]
    /// ECB rates with a reporting currency other than EUR: crossed when looked up (only the days
    /// and currencies a report needs, not every cell of a 25-year file).
    let crossesThroughEuro: Bool
    /// With ``crossesThroughEuro``: the reporting currency's rate per euro on each day it is quoted.
    let reportingPerEuro: [CalendarDate: ExactRate]

    /// The rate of `currency` for `day`: that day's, or else the last earlier one (nil when the file
    /// has none on or before `day`). The reporting currency's rate is 1 on every day. Crossed
    /// through the euro, a day counts only when both currencies are quoted on it.
    public func rate(of currency: String, on day: CalendarDate) -> DatedRate? {
        if currency == reportingCurrency { return DatedRate(date: day, rate: .one) }
        guard crossesThroughEuro else {
            guard let dated = rates[currency], let index = Self.lastIndex(in: dated, onOrBefore: day) else {
                return nil
            }
            return dated[index]
        }
        if currency == "EUR" {
            // Euros per unit of R = 1 / (R per EUR).
            guard let dated = rates[reportingCurrency], let index = Self.lastIndex(in: dated, onOrBefore: day) else {
                return nil
            }
            return DatedRate(date: dated[index].date, rate: dated[index].rate.reciprocal)
        }
        guard let dated = rates[currency], var index = Self.lastIndex(in: dated, onOrBefore: day) else { return nil }
        while true {
            if let reporting = reportingPerEuro[dated[index].date] {
                return DatedRate(date: dated[index].date, rate: dated[index].rate.dividedBy(reporting))
            }
            guard index > 0 else { return nil }
            index -= 1
        }
    }

    /// The last index whose date is on or before `day` (binary search; dates sorted and distinct).
    static func lastIndex(in dated: [DatedRate], onOrBefore day: CalendarDate) -> Int? {
        var low = 0
        var high = dated.count
        while low < high {
            let middle = (low + high) / 2
            if dated[middle].date <= day { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : low - 1
    }

    /// Whether `code` is three ASCII capital letters (`USD`, `KRW`).
    public static func isCurrencyCode(_ code: some StringProtocol) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    // MARK: Parsing

    /// Parses a rates file's bytes.
    /// - Throws: `ReportError(.invalidFXRates)` naming `fileName`, the line and the column (1-based,
    ///   in bytes) of the first thing that is not right.
    public static func parse(
        _ bytes: [UInt8], fileName: String, reportingCurrency: String
    ) throws(ReportError) -> FXRates {
        guard isCurrencyCode(reportingCurrency) else {
            throw ReportError(
                .invalidInput, "the reporting currency '\(reportingCurrency)' is not a 3-letter code such as USD")
        }
        guard bytes.count <= maximumBytes else {
            throw ReportError(
                .invalidFXRates, "\(fileName): larger than \(maximumBytes >> 20) MiB; give the rates of fewer days")
        }
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        guard let text = String(validating: body, as: UTF8.self) else {
            throw ReportError(.invalidFXRates, "\(fileName): not UTF-8 text")
        }
        // Lines split on LF bytes, a CR before it dropped (by bytes: this runs over the whole file).
        var lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            Substring(line.last == UInt8(ascii: "\r") ? line.dropLast() : line)
        }
        if lines.last == "" { lines.removeLast() }
        guard lines.count <= maximumLines + 1 else {
            throw ReportError(.invalidFXRates, "\(fileName): more than \(maximumLines) rows")
        }
        var parser = Parser(fileName: fileName, reportingCurrency: reportingCurrency)
        guard let header = lines.first else { throw parser.failure(line: 1, column: 1, "the file is empty") }
        let headerFields = try parser.fields(header, line: 1)
        let source: Source
        if headerFields.map(\.text) == tableHeader.split(separator: ",") {
            source = .table
        } else if headerFields.first?.text == "Date" {
            source = .ecb
            try parser.readECBHeader(headerFields)
        } else {
            throw parser.failure(
                line: 1, column: 1,
                "the header is neither `\(tableHeader)` nor the ECB's `Date,USD,JPY,…` (euro reference rates)")
        }
        for (offset, line) in lines.enumerated().dropFirst() {
            let fields = try parser.fields(line, line: offset + 1)
            switch source {
            case .table: try parser.readTableRow(fields, line: offset + 1)
            case .ecb: try parser.readECBRow(fields, line: offset + 1)
            }
        }
        let crosses = source == .ecb && reportingCurrency != "EUR"
        return FXRates(
            reportingCurrency: reportingCurrency, source: source, fileName: fileName,
            rates: parser.rates.mapValues { byDate in
                byDate.sorted { $0.key < $1.key }.map { DatedRate(date: $0.key, rate: $0.value) }
            }, crossesThroughEuro: crosses, reportingPerEuro: crosses ? parser.rates[reportingCurrency] ?? [:] : [:])
    }

    /// One field of a line, and the column (1-based, in bytes) it starts at.
    struct Field {
        let text: Substring
        let column: Int
    }

    struct Parser {
        let fileName: String
        let reportingCurrency: String
        var rates: [String: [CalendarDate: ExactRate]] = [:]
        /// ECB: the currency of each column after `Date` (nil for the trailing empty one).
        var ecbColumns: [String?] = []
        var ecbDates: Set<CalendarDate> = []

        func failure(line: Int, column: Int, _ message: String) -> ReportError {
            ReportError(.invalidFXRates, "\(fileName) line \(line), column \(column): \(message)")
        }

        /// Splits a line on commas (rates files are never quoted).
        func fields(_ text: Substring, line: Int) throws(ReportError) -> [Field] {
            guard text.utf8.count <= FXRates.maximumLineBytes else {
                throw failure(line: line, column: 1, "longer than \(FXRates.maximumLineBytes) bytes")
            }
            var fields: [Field] = []
            var column = 1
            // Bytes, not Characters: a rates file is ASCII, and this runs for every cell of it.
            for part in text.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                if let quote = part.firstIndex(of: UInt8(ascii: "\"")) {
                    throw failure(
                        line: line, column: column + part.distance(from: part.startIndex, to: quote),
                        "quoted fields are not read in a rates file")
                }
                fields.append(Field(text: Substring(part), column: column))
                column += part.count + 1
            }
            guard fields.count <= FXRates.maximumColumns else {
                throw failure(line: line, column: 1, "more than \(FXRates.maximumColumns) columns")
            }
            return fields
        }

        func date(_ field: Field, line: Int) throws(ReportError) -> CalendarDate {
            guard field.text.utf8.count == 10, let date = CalendarDate(String(field.text)) else {
                throw failure(line: line, column: field.column, "'\(field.text)' is not a date YYYY-MM-DD")
            }
            return date
        }

        func rate(_ field: Field, line: Int) throws(ReportError) -> ExactRate {
            switch ExactRate.parse(field.text) {
            case .success(let rate): return rate
            case .failure(let reason):
                throw failure(line: line, column: field.column, "rate '\(field.text.prefix(40))': \(reason)")
            }
        }

        mutating func readTableRow(_ fields: [Field], line: Int) throws(ReportError) {
            guard fields.count == 3 else {
                throw failure(
                    line: line, column: fields.last.map { $0.column } ?? 1,
                    "\(fields.count) fields; a row is date,currency,rate")
            }
            let date = try date(fields[0], line: line)
            let currency = fields[1].text
            guard FXRates.isCurrencyCode(currency) else {
                throw failure(line: line, column: fields[1].column, "'\(currency)' is not a 3-letter currency code")
            }
            let rate = try rate(fields[2], line: line)
            if currency == reportingCurrency {
                guard rate.isOne else {
                    throw failure(
                        line: line, column: fields[2].column,
                        "the reporting currency \(reportingCurrency) is worth 1 of itself, not \(rate)")
                }
                return
            }
            guard rates[String(currency), default: [:]].updateValue(rate, forKey: date) == nil else {
                throw failure(line: line, column: fields[0].column, "a second rate of \(currency) on \(date)")
            }
        }

        mutating func readECBHeader(_ fields: [Field]) throws(ReportError) {
            var seen: Set<Substring> = []
            for (offset, field) in fields.enumerated().dropFirst() {
                if field.text.isEmpty && offset == fields.count - 1 {
                    ecbColumns.append(nil)  // the trailing comma's empty column
                    continue
                }
                guard FXRates.isCurrencyCode(field.text), field.text != "EUR" else {
                    throw failure(
                        line: 1, column: field.column, "'\(field.text)' is not a currency quoted against the euro")
                }
                guard seen.insert(field.text).inserted else {
                    throw failure(line: 1, column: field.column, "\(field.text) is a column twice")
                }
                ecbColumns.append(String(field.text))
            }
            guard reportingCurrency == "EUR" || seen.contains(Substring(reportingCurrency)) else {
                throw failure(
                    line: 1, column: 1,
                    "the ECB file quotes no \(reportingCurrency), so no rate can be crossed through the euro to it")
            }
        }

        mutating func readECBRow(_ fields: [Field], line: Int) throws(ReportError) {
            guard fields.count == ecbColumns.count + 1 else {
                throw failure(
                    line: line, column: fields.last.map { $0.column } ?? 1,
                    "\(fields.count) fields under a header of \(ecbColumns.count + 1)")
            }
            let date = try date(fields[0], line: line)
            guard ecbDates.insert(date).inserted else {
                throw failure(line: line, column: fields[0].column, "\(date) is a row twice")
            }
            for (currency, field) in zip(ecbColumns, fields.dropFirst()) {
                guard let currency else {
                    guard field.text.isEmpty else {
                        throw failure(line: line, column: field.column, "a value under the header's empty last column")
                    }
                    continue
                }
                if field.text == "N/A" || field.text.isEmpty { continue }
                // Per euro as the file says; crossed to the reporting currency when looked up.
                rates[currency, default: [:]][date] = try rate(field, line: line)
            }
        }
    }
}

extension ReportError.Code {
    /// The exchange rates file cannot be read (its line and column are named).
    public static let invalidFXRates = ReportError.Code("invalid_fx_rates")
    /// A day's money has no exchange rate on or before it.
    public static let missingFXRate = ReportError.Code("missing_fx_rate")
}
