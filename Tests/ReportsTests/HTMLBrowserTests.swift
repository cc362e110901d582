import Foundation
import Ledger
import Postgres
import Reports
import TestSupport
import Testing

/// The HTML report in a real browser: Debian's Chromium, headless, at a phone's width.
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
