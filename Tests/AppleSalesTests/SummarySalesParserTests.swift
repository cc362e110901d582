import CivilDates
import Crypto
import Foundation
import Testing

@testable import AppleSales

@Suite("Summary Sales Report parser")
struct SummarySalesParserTests {
    static let date = CalendarDate(year: 2025, month: 3, day: 9)!

    static func report(_ layout: SalesReportGenerator.Layout = .v1_3) -> SalesReportGenerator {
        var generator = SalesReportGenerator(date: date, layout: layout)
        generator.rows = [
            .init(
                sku: "com.memolease.sesac1.sprout2", units: 3, customerPriceMilli: 1_200_000, customerCurrency: "KRW",
                countryCode: "KR"),
            .init(
                sku: "com.memolease.sesac1.sprout3", units: -1, customerPriceMilli: 990, customerCurrency: "USD",
                countryCode: "US"),
            .init(
                sku: "com.memolease.sesac1.sprout2", productType: "IA3", units: 2, customerPriceMilli: 0,
                customerCurrency: "JPY", countryCode: "JP"),
        ]
        return generator
    }

    @Test(
        "every layout, gzip'd or plain, LF or CRLF, reads the same rows by header name",
        arguments: SalesReportGenerator.Layout.allCases)
    func layouts(layout: SalesReportGenerator.Layout) throws {
        let generator = Self.report(layout)
        let parser = SummarySalesParser()
        let plain = try parser.parse(generator.text())
        let zipped = try parser.parse(generator.gzipped())
        let crlf = try parser.parse(generator.text(lineEnding: "\r\n"))
        #expect(plain == zipped, "gzip'd and plain are the same report, the same checksum")
        #expect(plain.rows == crlf.rows)
        #expect(plain.date == Self.date)
        #expect(plain.formatVersion == (layout == .v1_0 ? "1_0" : "1_3"))
        #expect(plain.provider == "APPLE" && plain.providerCountry == "US")
        #expect(plain.sha256 == Array(SHA256.hash(data: generator.text())))
        #expect(plain.rows.count == 3)
        let korea = try #require(plain.rows.first)
        #expect(korea.line == 2 && korea.sku == "com.memolease.sesac1.sprout2" && korea.units == 3)
        #expect(korea.customerPriceMilli == 1_200_000 && korea.customerCurrency == "KRW" && korea.countryCode == "KR")
        #expect(korea.developerProceedsMilli == 840_000 && korea.isInAppPurchase)
        let refund = plain.rows[1]
        #expect(refund.units == -1 && refund.customerPriceMilli == -990 && refund.developerProceedsMilli == -693)
        #expect(!plain.rows[2].isInAppPurchase && plain.rows[2].productType == "IA3")
    }

    @Test("amounts are exact milliunits, at most 3 decimals")
    func amounts() {
        let cases: [(String, Int64?)] = [
            ("0.99", 990), ("1200", 1_200_000), ("-0.99", -990), ("0.001", 1), ("12.5", 12_500), ("0", 0),
            ("0.9999", nil), ("1e3", nil), ("", nil), ("-", nil), ("1.", nil), (".5", nil), ("1,200", nil),
            ("+1", nil), ("999999999999", 999_999_999_999_000), ("1000000000000", nil),
        ]
        for (text, expected) in cases {
            switch Milliunits.parse(Substring(text)) {
            case .success(let value): #expect(value == expected, "\(text)")
            case .failure: #expect(expected == nil, "\(text) refused")
            }
        }
    }

    /// Replaces the `column` field of data line `line` (2 = the first row) in a 1_3 report.
    static func corrupt(_ column: String, to value: String, line: Int = 3) -> [UInt8] {
        corrupt([column: value], line: line)
    }

    static func corrupt(_ changes: [String: String], line: Int) -> [UInt8] {
        var lines = String(decoding: report().text(), as: UTF8.self).split(separator: "\n").map(String.init)
        let header = lines[0].split(separator: "\t", omittingEmptySubsequences: false)
        var fields = lines[line - 1].split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        for (column, value) in changes { fields[header.firstIndex { $0 == column }!] = value }
        lines[line - 1] = fields.joined(separator: "\t")
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    @Test("a malformed field is refused with its line and column, named by header")
    func refusals() throws {
        let parser = SummarySalesParser()
        let cases: [(bytes: [UInt8], column: String, says: String)] = [
            (Self.corrupt("Begin Date", to: "2025-03-09"), "Begin Date", "not a date MM/DD/YYYY"),
            (Self.corrupt("End Date", to: "02/30/2025"), "End Date", "not a date"),
            (Self.corrupt("Begin Date", to: "03/09/0000"), "Begin Date", "not a date"),
            (Self.corrupt(["Units": "9999999", "Customer Price": "999999999999"], line: 3), "Units", "add up past"),
            (Self.corrupt("Units", to: "three"), "Units", "not a whole number"),
            (Self.corrupt("Units", to: "1.5"), "Units", "not a whole number"),
            (Self.corrupt("Customer Price", to: "0.9999"), "Customer Price", "more than 3 decimals"),
            (Self.corrupt("Developer Proceeds", to: "1,00"), "Developer Proceeds", "not a decimal"),
            (Self.corrupt("Country Code", to: "KOR"), "Country Code", "2 capital letters"),
            (Self.corrupt("Customer Currency", to: ""), "Customer Currency", "empty"),
            (Self.corrupt("SKU", to: ""), "SKU", "empty"),
            (Self.corrupt("Begin Date", to: "03/10/2025", line: 3), "End Date", "not the Begin Date"),
        ]
        for (bytes, column, says) in cases {
            let error = try #require(throws: AppleSalesError.self) { try parser.parse(bytes) }
            #expect(error.code == .malformed)
            #expect(error.line == 3, "\(error)")
            #expect(error.column == column, "\(error)")
            let position = SalesReportGenerator.Layout.all.firstIndex(of: column)! + 1
            #expect(error.columnNumber == position, "\(error)")
            #expect(error.description.contains("line 3") && error.description.contains("'\(column)'"), "\(error)")
            #expect(error.message.contains(says), "\(error)")
        }
    }

    @Test("rows of two different dates are refused: a daily report has one date")
    func twoDates() throws {
        let bytes = Self.corrupt(["Begin Date": "03/10/2025", "End Date": "03/10/2025"], line: 4)
        let error = try #require(throws: AppleSalesError.self) { try SummarySalesParser().parse(bytes) }
        #expect(error.line == 4 && error.column == "Begin Date", "\(error)")
        #expect(error.message.contains("one date"), "\(error)")
    }

    @Test("a missing required column is refused on line 1, naming it")
    func missingColumn() throws {
        let text = String(decoding: Self.report().text(), as: UTF8.self)
            .replacingOccurrences(of: "Customer Price", with: "Price To Customer")
        let error = try #require(throws: AppleSalesError.self) { try SummarySalesParser().parse(Array(text.utf8)) }
        #expect(error.line == 1 && error.column == "Customer Price", "\(error)")
    }

    @Test("a line with a field too few is refused with its line")
    func shortLine() throws {
        var text = String(decoding: Self.report().text(), as: UTF8.self)
        text += "APPLE\tUS\n"
        let error = try #require(throws: AppleSalesError.self) { try SummarySalesParser().parse(Array(text.utf8)) }
        #expect(error.line == 5 && error.message.contains("2 fields"), "\(error)")
    }

    @Test("truncated, corrupt or trailing-garbage gzip is refused")
    func badGzip() throws {
        let zipped = Self.report().gzipped()
        for (bytes, says) in [
            (Array(zipped.prefix(zipped.count - 12)), "truncated"),
            (Array(zipped.prefix(20)), "truncated"),
            (zipped + [1, 2, 3], "follow the gzip stream"),
            ([0x1f, 0x8b] + Array(repeating: 0x55, count: 40), "corrupt"),
        ] {
            let error = try #require(throws: AppleSalesError.self) { try SummarySalesParser().parse(bytes) }
            #expect(error.code == .malformed && error.message.contains(says), "\(error)")
        }
    }

    @Test("bounds: a gzip bomb, a long line, too many rows, a file too large")
    func bounds() throws {
        // 8 MiB of one byte inflates from a few kB: past a 1 MiB bound it is refused, not inflated on.
        let bomb = gzip([UInt8](repeating: UInt8(ascii: "a"), count: 8 << 20))
        #expect(bomb.count < 64 << 10)
        let small = SummarySalesParser(limits: .init(maximumUncompressedBytes: 1 << 20))
        let inflated = try #require(throws: AppleSalesError.self) { try small.parse(bomb) }
        #expect(inflated.code == .tooLarge && inflated.message.contains("gzip bomb"), "\(inflated)")

        let longLine = SummarySalesParser(limits: .init(maximumLineBytes: 100))
        let long = try #require(throws: AppleSalesError.self) { try longLine.parse(Self.report().text()) }
        #expect(long.code == .tooLarge && long.line == 1, "\(long)")

        let fewRows = SummarySalesParser(limits: .init(maximumRows: 2))
        let rows = try #require(throws: AppleSalesError.self) { try fewRows.parse(Self.report().text()) }
        #expect(rows.code == .tooLarge && rows.message.contains("rows"), "\(rows)")

        let tinyFile = SummarySalesParser(limits: .init(maximumFileBytes: 100))
        let file = try #require(throws: AppleSalesError.self) { try tinyFile.parse(Self.report().gzipped()) }
        #expect(file.code == .tooLarge, "\(file)")
    }

    @Test("empty, header-only, binary and invalid UTF-8 files are refused")
    func notReports() throws {
        let header = Array((SalesReportGenerator.Layout.all.joined(separator: "\t") + "\n").utf8)
        for (bytes, says) in [
            ([UInt8](), "empty"), (Array("\n\n".utf8), "empty"), (header, "no rows"),
            (header + [0xff, 0xfe, 0x41, 0x0a], "not valid UTF-8"), (header + [0x41, 0, 0x41, 0x0a], "NUL"),
        ] {
            let error = try #require(throws: AppleSalesError.self) { try SummarySalesParser().parse(bytes) }
            #expect(error.message.contains(says), "\(error)")
        }
    }

    @Test("alpha-3 storefronts map to alpha-2 countries; an unknown one maps to nothing")
    func storefronts() {
        let expected = [
            "KOR": "KR", "USA": "US", "JPN": "JP", "DEU": "DE", "GBR": "GB", "CHN": "CN", "TWN": "TW", "HKG": "HK",
            "AUT": "AT", "CHE": "CH", "XKS": "XK", "kor": "KR",
        ]
        for (alpha3, alpha2) in expected { #expect(StorefrontCountries.alpha2(forStorefront: alpha3) == alpha2) }
        #expect(StorefrontCountries.alpha2(forStorefront: "ZZZ") == nil)
        #expect(StorefrontCountries.alpha2(forStorefront: "") == nil)
        #expect(StorefrontCountries.alpha2ByAlpha3.count == 250)
        #expect(Set(StorefrontCountries.alpha2ByAlpha3.values).count == 250, "no two storefronts share a country")
    }
}
