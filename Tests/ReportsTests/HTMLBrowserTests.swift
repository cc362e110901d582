import Foundation
import Ledger
import Postgres
import TestSupport
import Testing

@testable import Reports

/// The HTML report in a real browser: Debian's Chromium, headless, at a phone's width and a desktop's.
@Suite("HTML report in Chromium")
struct HTMLBrowserTests {
    @Test("the daily report renders, light and dark, at a phone's width, with no console message")
    func rendersInChromium() async throws {
        let chromium = try HeadlessChromium.find()
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 11)
            let report = try await RevenueReporter(client: db.client).daily(date: day("2025-03-06"))
            try await withTemporaryFolder { folder in
                let path = try ReportWriter(outputDirectory: folder).write(report, formats: [.html])[0]
                let light = try chromium.render(path, width: 390, height: 2400)
                let dark = try chromium.render(path, width: 390, height: 2400, dark: true)
                for rendering in [light, dark] {
                    #expect(rendering.consoleMessages.isEmpty, "console: \(rendering.consoleMessages)")
                    #expect(rendering.screenshot.width == 390)
                    let pixels = rendering.screenshot.pixels.count
                    // Text, tables and bars: a good share of the page is not background, in many colours.
                    #expect(rendering.screenshot.nonBackgroundPixels * 20 > pixels)
                    #expect(rendering.screenshot.distinctColours > 50)
                }
                let (lightBackground, darkBackground) = (light.screenshot.pixels[0], dark.screenshot.pixels[0])
                #expect(Self.brightness(lightBackground) > 200)
                #expect(Self.brightness(darkBackground) < 60)
                // The chart colours are there: the light theme's net revenue green (#1a7f37) and refunds red (#cf222e).
                let lightColours = Set(light.screenshot.pixels)
                let darkColours = Set(dark.screenshot.pixels)
                #expect(lightColours.contains(0x1A7F37), "no net revenue green in the light screenshot")
                #expect(lightColours.contains(0xCF222E), "no refunds red in the light screenshot")
                #expect(darkColours.contains(0x3FB950), "no net revenue green in the dark screenshot")
                // Returning buyers in their own purple, light and dark, never the refunds' red.
                #expect(lightColours.contains(0x8250DF), "no returning buyers purple in the light screenshot")
                #expect(darkColours.contains(0xA371F7), "no returning buyers purple in the dark screenshot")
            }
        }
    }

    @Test("at 1280 px nothing scrolls sideways: not the page, not one table, every figure's included")
    func fitsADesktopWindow() async throws {
        let chromium = try HeadlessChromium.find()
        try await withReportLedger { db, ledger in
            _ = try await RandomLedgerReportTests.recordRandomLedger(ledger, seed: 11)
            let reporter = RevenueReporter(client: db.client)
            let reports = [
                try await reporter.daily(date: day("2025-03-06"), options: ReportOptions(timeZone: "Asia/Seoul")),
                try await reporter.range(from: day("2025-03-01"), through: day("2025-03-12"), by: .week),
            ]
            try await withTemporaryFolder { folder in
                for (number, report) in reports.enumerated() {
                    // The page forbids scripts; this copy drops that rule, opens "Every figure", and
                    // reports as a console error each box wider than the room it has.
                    let page = RevenueHTML.render(report).replacingOccurrences(
                        of:
                            #"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">"#,
                        with: ""
                    ).replacingOccurrences(of: "<details class=\"figures\">", with: "<details class=\"figures\" open>")
                        .replacingOccurrences(
                            of: "</body>",
                            with: """
                                <script>
                                const root = document.documentElement;
                                if (root.scrollWidth > root.clientWidth) console.error('the page is ' + root.scrollWidth + ' px wide in ' + root.clientWidth);
                                let tables = 0;
                                for (const box of document.querySelectorAll('.scroll')) {
                                  tables += 1;
                                  if (box.scrollWidth > box.clientWidth) {
                                    console.error('a table of ' + box.scrollWidth + ' px in ' + box.clientWidth + ': ' + box.querySelector('tr').textContent.slice(0, 60));
                                  }
                                }
                                if (tables < 8) console.error('only ' + tables + ' tables');
                                </script>
                                </body>
                                """)
                    #expect(
                        !page.contains("Content-Security-Policy") && page.contains("<details class=\"figures\" open>"))
                    let path = folder + "/report\(number).html"
                    try Data(page.utf8).write(to: URL(fileURLWithPath: path))
                    let rendering = try chromium.render(path, width: 1280, height: 1200)
                    #expect(rendering.consoleMessages.isEmpty, "report \(number): \(rendering.consoleMessages)")
                }
            }
        }
    }

    @Test("no chart text is cut off: every label lies inside its chart, with large amounts and long names")
    func nothingClipped() async throws {
        let chromium = try HeadlessChromium.find()
        var document = HTMLDocument()
        document.bullets(["charts with the widest labels a report can have"])
        let days = ["06-17", "06-18", "06-19"]
        for currency in ["USD", "KRW", "EUR"] {
            document.chart(
                ReportChart(
                    purpose: .trend, layout: .grouped, title: "Net revenue (\(currency))", currency: currency,
                    categories: days,
                    series: [
                        .init(name: "net revenue", values: [1_928_760, 987_654_321_000, 12_340]),
                        .init(name: "refunds", values: [64_600, 0, 123_456_789_000]),
                    ]))
        }
        document.chart(
            ReportChart(
                purpose: .buyers, layout: .stacked, title: "First-time and returning buyers", currency: nil,
                categories: days,
                series: [
                    .init(name: "first-time", values: [71, 0, 1]),
                    .init(name: "returning", values: [40_535, 1_234_567, 3]),
                ]))
        document.chart(
            ReportChart(
                purpose: .units, layout: .horizontal, title: "Units bought per item", currency: nil,
                categories: ["뮤지션 작업실 (background 7)", "낮의 산책로 (background 3)", "튼튼 새싹 (face 1)"],
                series: [.init(name: "units", values: [1_234_567, 3_939, 1])]))
        // The page forbids scripts; this copy drops that rule and reports, as a console error, every
        // text whose box leaves its SVG's drawing area.
        let page = document.page(title: "charts").replacingOccurrences(
            of: #"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">"#,
            with: ""
        ).replacingOccurrences(
            of: "</body>",
            with: """
                <script>
                let texts = 0;
                for (const svg of document.querySelectorAll('svg')) {
                  const width = svg.viewBox.baseVal.width;
                  for (const text of svg.querySelectorAll('text')) {
                    texts += 1;
                    const box = text.getBBox();
                    if (box.x < 0 || box.x + box.width > width) {
                      console.error('cut off: ' + text.textContent + ' from ' + box.x.toFixed(1) + ' to ' + (box.x + box.width).toFixed(1) + ' of ' + width);
                    }
                  }
                }
                if (texts < 20) console.error('only ' + texts + ' chart texts');
                </script>
                </body>
                """)
        #expect(!page.contains("Content-Security-Policy"))
        try await withTemporaryFolder { folder in
            let path = folder + "/charts.html"
            try Data(page.utf8).write(to: URL(fileURLWithPath: path))
            for width in [390, 1000] {
                let rendering = try chromium.render(path, width: width, height: 2400)
                #expect(rendering.consoleMessages.isEmpty, "at \(width) px: \(rendering.consoleMessages)")
            }
        }
    }

    @Test("the checks see a blank page and a console error (so they can fail)")
    func checksCanFail() throws {
        let chromium = try HeadlessChromium.find()
        let folder = NSTemporaryDirectory() + "shopledger-blank-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let page = folder + "/blank.html"
        try Data("<!DOCTYPE html><html><body><script>console.error('broken')</script></body></html>".utf8)
            .write(to: URL(fileURLWithPath: page))
        let rendering = try chromium.render(page, width: 200, height: 200)
        #expect(rendering.screenshot.nonBackgroundPixels == 0)
        #expect(rendering.screenshot.distinctColours == 1)
        #expect(rendering.consoleMessages.count == 1)
        #expect(rendering.consoleMessages.first?.contains("broken") == true)
    }

    static func brightness(_ pixel: UInt32) -> Int {
        let (red, green, blue) = ((pixel >> 16) & 0xFF, (pixel >> 8) & 0xFF, pixel & 0xFF)
        return Int(red + green + blue) / 3
    }
}
