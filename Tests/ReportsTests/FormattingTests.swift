import CivilDates
import Foundation
import Testing

@testable import Reports

@Suite("Rates and amounts")
struct FormattingTests {
    @Test("commission rates parse exactly from decimals and round half up per unit to the minor unit")
    func commissionRates() {
        #expect(CommissionRate(decimal: "0.30")?.partsPerMillion == 300_000)
        #expect(CommissionRate(decimal: "0.15")?.description == "0.15")
        #expect(CommissionRate(decimal: "0.275")?.percentText == "27.5%")
        #expect(CommissionRate(decimal: "1")?.description == "1.00")
        #expect(CommissionRate(decimal: "0")?.description == "0.00")
        for bad in ["", "30", "1.5", "-0.1", "0.1234567", ".3", "0,3", "0.3x", "1.01"] {
            #expect(CommissionRate(decimal: bad) == nil, "\(bad)")
        }
        let standard = CommissionRate.standard
        #expect(standard.commissionMilli(onUnitPriced: 990, currency: "USD") == 300)  // 0.297 → 0.30
        #expect(standard.commissionMilli(onUnitPriced: 1_200_000, currency: "KRW") == 360_000)
        #expect(CommissionRate(decimal: "0.15")!.commissionMilli(onUnitPriced: 1_100_000, currency: "KRW") == 165_000)
        let small = CommissionRate(decimal: "0.15")!
        #expect(small.commissionMilli(onUnitPriced: 10_000, currency: "KRW") == 2_000)  // ₩1.5 → ₩2
        #expect(small.commissionMilli(onUnitPriced: 3_000, currency: "KRW") == 0)  // ₩0.45 → ₩0
        #expect(standard.commissionMilli(onUnitPriced: 1_235, currency: "KWD") == 371)  // 0.3705 → 0.371 (fils)
        #expect(standard.commissionMilli(onUnitPriced: 0, currency: "USD") == 0)
    }

    @Test("amounts show the currency's own precision, exactly, and never round")
    func amounts() {
        #expect(CurrencyFormat.amount(2_500_000, currency: "KRW") == "2500")
        #expect(CurrencyFormat.amount(2_500_000, currency: "KRW", grouping: true) == "2,500")
        #expect(CurrencyFormat.amount(-1_234_567_000, currency: "KRW", grouping: true) == "-1,234,567")
        #expect(CurrencyFormat.amount(990, currency: "USD") == "0.99")
        #expect(CurrencyFormat.amount(-1_990, currency: "USD") == "-1.99")
        #expect(CurrencyFormat.amount(0, currency: "USD") == "0.00")
        #expect(CurrencyFormat.amount(1_234, currency: "KRW") == "1.234")  // not a whole won: all decimals
        #expect(CurrencyFormat.amount(995, currency: "USD") == "0.995")
        #expect(CurrencyFormat.amount(1_500, currency: "KWD") == "1.500")
        #expect(CurrencyFormat.amount(300_000, currency: "JPY") == "300")
        #expect(CurrencyFormat.roundedQuotient(10_000, dividedBy: 7, currency: "USD") == 1_430)  // 1.428… → 1.43
        #expect(CurrencyFormat.roundedQuotient(-3_500_000, dividedBy: 7, currency: "KRW") == -500_000)
    }

    @Test("CSV fields are quoted per RFC 4180 and formula-looking text is defused")
    func csvFields() {
        #expect(RevenueCSV.field("기본 새싹") == "기본 새싹")
        #expect(RevenueCSV.field("a,b") == "\"a,b\"")
        #expect(RevenueCSV.field("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(RevenueCSV.field("two\nlines") == "\"two\nlines\"")
        #expect(RevenueCSV.field("=HYPERLINK(1)") == "'=HYPERLINK(1)")
        // Amounts the report wrote stay numbers; text that looks like one is text.
        #expect(RevenueCSV.field(.amount(-2_500_000, currency: "KRW")) == "-2500")
        #expect(RevenueCSV.field(.amount(-1_500, currency: "KWD")) == "-1.500")
        #expect(RevenueCSV.field(.number(-3)) == "-3")
        #expect(RevenueCSV.field("-2500") == "'-2500")
        #expect(RevenueCSV.field(.decimal("-x")) == "'-x")
        #expect(RevenueCSV.field(.decimal("-1+2")) == "'-1+2")
    }

    @Test("CSV text gets OWASP's rule: a leading = + - @ tab CR or LF is prefixed with an apostrophe")
    func csvFormulaRule() {
        #expect(RevenueCSV.field("-1+2") == "'-1+2")
        #expect(RevenueCSV.field("-2+3+cmd|' /C calc'!A0") == "'-2+3+cmd|' /C calc'!A0")
        #expect(RevenueCSV.field("+1") == "'+1")
        #expect(RevenueCSV.field("@SUM(1)") == "'@SUM(1)")
        #expect(RevenueCSV.field("\t=1+2") == "\"'\t=1+2\"")
        #expect(RevenueCSV.field("\r=1+2") == "\"'\r=1+2\"")
        #expect(RevenueCSV.field("\n=1+2") == "\"'\n=1+2\"")
        #expect(RevenueCSV.field("a-1") == "a-1")
        // OWASP's two examples: the apostrophe, quotes doubled, the field quoted.
        #expect(RevenueCSV.field(#"=1+2";=1+2"#) == #""'=1+2"";=1+2""#)
        #expect(RevenueCSV.field(#"=1+2'" ;,=1+2"#) == #""'=1+2'"" ;,=1+2""#)
        // Separators spreadsheets may split on besides the comma are quoted too, so no cell starts
        // inside the field.
        #expect(RevenueCSV.field("a;=1+2") == "\"a;=1+2\"")
        #expect(RevenueCSV.field("a\t=1+2") == "\"a\t=1+2\"")
    }

    @Test("Markdown tables escape pipes and measure Hangul as two columns")
    func markdownTables() {
        var table = MarkdownTable([("item", .left), ("n", .right)])
        table.append(["튼튼 새싹", "1"])
        table.append(["a|b", "12"])
        #expect(
            table.render() == """
                | item      |   n |
                | --------- | --: |
                | 튼튼 새싹 |   1 |
                | a\\|b      |  12 |

                """)
    }

    @Test("Markdown: text from outside is escaped, code from outside fenced past its own backticks")
    func markdownText() {
        #expect(MarkdownDocument.escape(#"[x](y) <b> & a_b\"#) == #"\[x\]\(y\) &lt;b&gt; &amp; a\_b\\"#)
        #expect(MarkdownDocument.escape("one\ntwo\r\nthree") == "one two  three")
        #expect(MarkdownDocument.escape("튼튼 새싹 7") == "튼튼 새싹 7")
        #expect(MarkdownDocument.codeSpan("S_D_1.txt", inTable: false) == "`S_D_1.txt`")
        #expect(MarkdownDocument.codeSpan("a`b``c", inTable: false) == "```a`b``c```")
        #expect(MarkdownDocument.codeSpan("`x`", inTable: false) == "`` `x` ``")
        #expect(MarkdownDocument.codeSpan(" x ", inTable: false) == "`  x  `")
        #expect(MarkdownDocument.codeSpan("a|b", inTable: true) == #"`a\|b`"#)
        #expect(MarkdownDocument.codeSpan("", inTable: false) == "")
        // A String interpolated into a section's text is text; the literal around it is markup.
        let name = "**x** | y"
        let text: ReportText = "**\(name)** (\(3)) \(code: "f`g")"
        #expect(MarkdownDocument.inline(text) == #"**\*\*x\*\* \| y** (3) ``f`g``"#)
        #expect(
            HTMLDocument.inline(text) == "<strong>&#42;&#42;x&#42;&#42; | y</strong> (3) <code>f&#96;g</code>")
        var table = MarkdownTable([("item", .left)])
        table.append(["\(name)"])
        table.append([.markup("a|b")])
        #expect(table.render().contains(#"| \*\*x\*\* \| y |"#) && table.render().contains(#"| a\|b "#))
    }

    @Test("report formats parse from a list")
    func formats() throws {
        #expect(try ReportFormat.list("csv,md") == [.csv, .md])
        #expect(try ReportFormat.list("md") == [.md])
        #expect(try ReportFormat.list("MD, csv,md") == [.md, .csv])
        #expect(throws: ReportError.self) { try ReportFormat.list("pdf") }
    }
}
