import AppleSales
import CivilDates
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Postgres
import Reports

/// The money section (finance and above): the daily, range and month revenue reports as
/// `shopledger report` writes them (the same `RevenueReporter` calls, the same HTML document with its
/// charts, the same CSV), served live through a short-lived ``ReportCache``; and Apple's sales report
/// of a day against the ledger, as `shopledger reconcile apple` shows it.
struct MoneyRoutes: Sendable {
    let reporter: RevenueReporter
    let comparer: AppleSalesComparer
    let importer: AppleSalesImporter
    let cache: ReportCache
    let audit: ConsoleAudit
    let clock: @Sendable () -> Date

    /// Zones the forms suggest (any IANA name the database knows is accepted).
    static let zones = ["UTC", "Asia/Seoul", "America/Los_Angeles", "Europe/London", "Asia/Tokyo"]

    func register(on group: RouterGroup<ConsoleContext>) {
        group.get("money") { request, context -> Response in
            indexPage(
                context: context, timeZone: request.uri.queryParameters.get("tz") ?? "UTC",
                importedDays: try await importer.importedDays(limit: 14))
        }
        group.get("money/report") { request, context -> Response in
            try await withReport(request, context: context) { wanted, entry in
                document(entry, request: wanted, context: context)
            }
        }
        group.get("money/report.csv") { request, context -> Response in
            let session = try context.requireSession()
            return try await withReport(request, context: context) { wanted, entry in
                try await audit.record(
                    "report_csv", by: session.operatorAccount.name, address: context.address,
                    target: wanted.description)
                return Response(
                    status: .ok,
                    headers: [
                        .contentType: "text/csv; charset=utf-8",
                        .contentDisposition:
                            "attachment; filename=\"\(wanted.fileName(folder: entry.report.folderName))\"",
                    ],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: RevenueCSV.render(entry.report))))
            }
        }
        group.get("money/apple") { request, context -> Response in
            let text = request.uri.queryParameters.get("date")
            return try await applePage(context: context, dateText: text)
        }
    }

    // MARK: Reports

    /// `body` with the report the query asks for (cached, or made now); the refusal page when the query
    /// or the reporter refuses it (a bad date, an unknown time zone, a range too long).
    private func withReport(
        _ request: Request, context: ConsoleContext,
        _ body: (ReportRequest, ReportCache.Entry) async throws -> Response
    ) async throws -> Response {
        let wanted: ReportRequest
        do throws(ReportRequest.Refusal) {
            wanted = try ReportRequest.parse { request.uri.queryParameters.get($0) }
        } catch {
            return refusal(error, context: context)
        }
        let entry: ReportCache.Entry
        do {
            entry = try await cache.entry(for: wanted) { try await wanted.make(with: reporter) }
        } catch let error as ReportError {
            return Pages.error(status: .badRequest, context: context, message: error.message)
        }
        return try await body(wanted, entry)
    }

    private func refusal(_ error: ReportRequest.Refusal, context: ConsoleContext) -> Response {
        Pages.error(
            status: .badRequest, context: context, message: context.language.pick(error.english, error.korean))
    }

    /// The report's own HTML document (the bytes `shopledger report` writes to revenue.html), with the
    /// console's links above its title. Its inline style sheet is allowed by its hash, so the policy
    /// stays as strict as the console's: no inline style but that one, no script.
    private func document(_ entry: ReportCache.Entry, request: ReportRequest, context: ConsoleContext) -> Response {
        let language = context.language
        let links: HTML = """
            <nav aria-label="\(language.pick("Console", "콘솔"))" lang="\(language.rawValue)"><p>\
            <a href="/money">\(language.pick("← Money", "← 매출"))</a> · \
            <a href="/money/report.csv?\(request.query)">\(language.pick("Download this report as CSV", "이 보고서를 CSV로 내려받기"))</a>\
            </p></nav>
            """
        let html = Self.inserting(links, after: "<main>\n", into: entry.html)
        let policy =
            "default-src 'none'; style-src \(entry.styleSource); img-src 'self' data:; form-action 'self'; "
            + "frame-ancestors 'none'; base-uri 'none'"
        return Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .contentSecurityPolicy: policy],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// `document` with `html` inserted after the first `marker` (at the start when there is none).
    static func inserting(_ html: HTML, after marker: String, into document: String) -> String {
        guard let range = document.range(of: marker) else { return html.text + document }
        return String(document[..<range.upperBound]) + html.text + "\n" + String(document[range.upperBound...])
    }

    // MARK: Pages

    private func indexPage(
        context: ConsoleContext, timeZone: String, importedDays: [AppleSalesImporter.ImportedDay]
    ) -> Response {
        let language = context.language
        let zone = Self.zones.contains(timeZone) ? timeZone : "UTC"
        let yesterday = Self.yesterday(clock(), timeZone: zone).description
        let month = String(yesterday.prefix(7))
        let zoneOptions: [HTML] = Self.zones.map { "<option value=\"\($0)\"></option>" }
        func zoneField(_ id: String) -> HTML {
            """
            <label for="\(id)">\(language.pick("Time zone", "시간대"))</label>
            <input id="\(id)" name="tz" value="\(zone)" list="zones" size="20" required>
            """
        }
        let groupings: [HTML] = [
            ("day", "by day", "일별"), ("week", "by week", "주별"), ("month", "by month", "월별"),
        ].map { "<option value=\"\($0.0)\">\(language.pick($0.1, $0.2))</option>" }
        let appleDay = Self.yesterday(clock(), timeZone: AppleSalesComparison.timeZone).description
        let days: [HTML] = importedDays.map { day in
            let note = day.noSales ? language.pick(" (no sales)", " (판매 없음)") : ""
            return "<li><a href=\"/money/apple?date=\(day.date.description)\">\(day.date.description)</a>\(note)</li>"
        }
        let imported: HTML =
            days.isEmpty
            ? "<p>\(Pages.prose(language.pick("No Summary Sales Report was imported yet (`shopledger apple sales import FILE` or `apple sales fetch`).", "아직 가져온 Summary Sales Report가 없습니다 (`shopledger apple sales import FILE` 또는 `apple sales fetch`).")))</p>"
            : "<p>\(language.pick("The newest imported days:", "최근 가져온 날짜:"))</p><ul id=\"apple-days\">\(days)</ul>"
        return Pages.page(
            title: language.pick("Money", "매출"), context: context, path: "/money",
            """
            <datalist id="zones">\(zoneOptions)</datalist>
            <p>\(Pages.prose(language.pick("The revenue reports of `shopledger report`, made from the ledger when you open them (kept for a minute), each with its CSV. A day counts the purchases made in it and the refunds the store processed in it, in the time zone you choose.", "`shopledger report`와 같은 매출 보고서입니다. 열 때 원장에서 만들며 1분 동안 보관합니다. CSV도 내려받을 수 있습니다. 하루는 고른 시간대의 하루이며, 그날의 구매와 그날 처리된 환불을 셉니다.")))</p>
            <h2>\(language.pick("Daily report", "일간 보고서"))</h2>
            <form method="get" action="/money/report" class="row">
            <input type="hidden" name="kind" value="daily">
            <span class="field"><label for="daily-date">\(language.pick("Day", "날짜"))</label>
            <input id="daily-date" name="date" type="date" value="\(yesterday)" required></span>
            <span>\(zoneField("daily-tz"))</span>
            <button type="submit">\(language.pick("Open the daily report", "일간 보고서 열기"))</button>
            </form>
            <h2>\(language.pick("Range report", "기간 보고서"))</h2>
            <form method="get" action="/money/report" class="row">
            <input type="hidden" name="kind" value="range">
            <span class="field"><label for="range-from">\(language.pick("First day", "시작일"))</label>
            <input id="range-from" name="from" type="date" value="\(month)-01" required></span>
            <span class="field"><label for="range-to">\(language.pick("Last day (included)", "종료일 (포함)"))</label>
            <input id="range-to" name="to" type="date" value="\(yesterday)" required></span>
            <span class="field"><label for="range-by">\(language.pick("Periods", "구간"))</label>
            <select id="range-by" name="by">\(groupings)</select></span>
            <span>\(zoneField("range-tz"))</span>
            <button type="submit">\(language.pick("Open the range report", "기간 보고서 열기"))</button>
            </form>
            <h2>\(language.pick("Month report", "월간 보고서"))</h2>
            <form method="get" action="/money/report" class="row">
            <input type="hidden" name="kind" value="month">
            <span class="field"><label for="month-month">\(language.pick("Month (YYYY-MM)", "월 (YYYY-MM)"))</label>
            <input id="month-month" name="month" type="month" value="\(month)" pattern="[0-9]{4}-[0-9]{2}" required></span>
            <span>\(zoneField("month-tz"))</span>
            <button type="submit">\(language.pick("Open the month report", "월간 보고서 열기"))</button>
            </form>
            <h2>\(language.pick("Reporting currency", "보고 통화"))</h2>
            <p>\(Pages.prose(language.pick("The reports show the production totals in each currency they were paid in. Converting them to one reporting currency needs exchange rates, which `shopledger report --reporting-currency CODE --fx-rates FILE` reads from a file; the server has no such file, so these pages show the totals per currency only.", "보고서는 결제된 통화별로 운영 매출 합계를 보여 줍니다. 하나의 보고 통화로 환산하려면 환율이 필요한데, `shopledger report --reporting-currency CODE --fx-rates FILE`이 파일에서 읽습니다. 서버에는 그 파일이 없으므로 이 페이지는 통화별 합계만 보여 줍니다.")))</p>
            <h2>\(language.pick("Apple's sales report against the ledger", "Apple 판매 보고서와 원장 대조"))</h2>
            <form method="get" action="/money/apple" class="row">
            <span class="field"><label for="apple-date">\(language.pick("Apple's day (Pacific time)", "Apple 기준일 (미국 태평양 시간)"))</label>
            <input id="apple-date" name="date" type="date" value="\(appleDay)" required></span>
            <button type="submit">\(language.pick("Compare", "대조"))</button>
            </form>
            \(imported)
            """)
    }

    private func applePage(context: ConsoleContext, dateText: String?) async throws -> Response {
        let language = context.language
        let title = language.pick("Apple's sales report against the ledger", "Apple 판매 보고서와 원장 대조")
        let date: CalendarDate
        do throws(ReportRequest.Refusal) {
            date = try ReportRequest.date(dateText, "day", "날짜")
        } catch {
            return refusal(error, context: context)
        }
        let form: HTML = """
            <form method="get" action="/money/apple" class="row">
            <span class="field"><label for="apple-date">\(language.pick("Apple's day (Pacific time)", "Apple 기준일 (미국 태평양 시간)"))</label>
            <input id="apple-date" name="date" type="date" value="\(date.description)" required></span>
            <button type="submit">\(language.pick("Compare", "대조"))</button>
            </form>
            <p><a href="/money">\(language.pick("← Money", "← 매출"))</a></p>
            """
        let comparison: AppleSalesComparison
        do {
            comparison = try await comparer.compare(date: date)
        } catch let error as AppleSalesError where error.code == .noReport {
            return Pages.page(
                title: title, context: context, path: "/money",
                """
                \(form)
                <p role="status">\(Pages.prose(language.pick("No Summary Sales Report of \(date.description) was imported. Apple publishes a day's report the next day; `shopledger apple sales import FILE` (or `apple sales fetch`) stores it.", "\(date.description)의 Summary Sales Report를 가져오지 않았습니다. Apple은 다음 날 보고서를 공개하며, `shopledger apple sales import FILE` (또는 `apple sales fetch`)로 저장합니다.")))</p>
                """)
        }
        return Pages.page(
            title: title, context: context, path: "/money", "\(form)\(Self.comparison(comparison, language))")
    }

    /// What `shopledger reconcile apple` prints, as a page: the report compared, the counts, each
    /// discrepancy, and what was not compared.
    static func comparison(_ comparison: AppleSalesComparison, _ language: Language) -> HTML {
        let result: HTML =
            comparison.passed
            ? "<p class=\"ok\" role=\"status\">\(language.pick("The ledger agrees with Apple's report.", "원장이 Apple 보고서와 일치합니다."))</p>"
            : "<p class=\"error\" role=\"status\">\(language.pick("Discrepancies: \(comparison.discrepancies.count).", "불일치: \(comparison.discrepancies.count)건."))</p>"
        func rows(_ lines: [AppleSalesComparison.Line]) -> [HTML] {
            lines.map { line in
                """
                <tr><th scope="row">\(line.product)</th><td>\(line.country)</td><td>\(line.currency)</td>
                <td class="num">\(line.appleUnits)</td><td class="num">\(line.ledgerUnits)</td>
                <td class="num">\(Pages.money(milli: line.appleCustomerPriceMilli, currency: line.currency))</td>
                <td class="num">\(Pages.money(milli: line.ledgerCustomerPriceMilli, currency: line.currency))</td>
                <td>\(line.text)</td></tr>
                """
            }
        }
        let header: HTML = """
            <thead><tr><th scope="col">\(language.pick("Product", "상품"))</th><th scope="col">\(language.pick("Country", "국가"))</th>
            <th scope="col">\(language.pick("Currency", "통화"))</th><th scope="col">\(language.pick("Apple units", "Apple 수량"))</th>
            <th scope="col">\(language.pick("Ledger units", "원장 수량"))</th><th scope="col">\(language.pick("Apple customer price", "Apple 고객 가격"))</th>
            <th scope="col">\(language.pick("Ledger customer price", "원장 고객 가격"))</th><th scope="col">\(language.pick("Meaning", "의미"))</th></tr></thead>
            """
        var notes: [HTML] = comparison.uncompared.map {
            "<li>\(language.pick("Not compared", "대조하지 않음")): \($0.productType) · \($0.rows) \(language.pick("rows", "행")) (\($0.units) \(language.pick("units", "개")))</li>"
        }
        if comparison.unpricedLedgerPurchases > 0 {
            notes.append(
                "<li>\(language.pick("Ledger purchases of the day with no price yet (not compared)", "가격을 아직 모르는 그날의 원장 구매 (대조하지 않음)")): \(comparison.unpricedLedgerPurchases)</li>"
            )
        }
        let none: HTML = "<p>\(language.pick("None.", "없습니다."))</p>"
        let discrepancies: HTML =
            comparison.discrepancies.isEmpty
            ? none : "<table id=\"discrepancies\">\(header)<tbody>\(rows(comparison.discrepancies))</tbody></table>"
        let matched: HTML =
            comparison.matched.isEmpty
            ? none : "<table id=\"matched\">\(header)<tbody>\(rows(comparison.matched))</tbody></table>"
        let noteList: HTML = notes.isEmpty ? "" : "<ul>\(notes)</ul>"
        return """
            <dl class="facts">
            <dt>\(language.pick("Apple's day", "Apple 기준일"))</dt><dd>\(comparison.date.description) (\(AppleSalesComparison.timeZone): \(comparison.startsAtUTC) – \(comparison.endsAtUTC) UTC)</dd>
            <dt>\(language.pick("Report compared", "대조한 보고서"))</dt><dd>\(comparison.reportId) · \(comparison.fileName)\(comparison.importsOfDate > 1 ? language.pick(" (the newest of \(comparison.importsOfDate) imports)", " (가져온 \(comparison.importsOfDate)개 중 최신)") : "")</dd>
            <dt>\(language.pick("Matched", "일치"))</dt><dd>\(comparison.matched.count)</dd>
            <dt>\(language.pick("Discrepancies", "불일치"))</dt><dd>\(comparison.discrepancies.count)</dd>
            </dl>
            \(result)
            <p>\(language.pick("Compared: in-app purchases (IA1) per product, country and currency, units and customer price totals, against the ledger's production purchases bought for themselves on that Pacific day, less its refunds and plus its reversals.", "대조 대상: 상품·국가·통화별 인앱 구매(IA1)의 수량과 고객 가격 합계를, 같은 태평양 시간 하루의 원장 운영 구매(가족 공유 제외)에서 그날의 환불을 빼고 환불 취소를 더한 값과 비교합니다."))</p>
            <h2>\(language.pick("Discrepancies", "불일치"))</h2>
            \(discrepancies)
            <h2>\(language.pick("Matched", "일치"))</h2>
            \(matched)
            \(noteList)
            """
    }

    /// The day before `now`'s day in `timeZone` (UTC when the name is not one Foundation knows).
    static func yesterday(_ now: Date, timeZone: String) -> CalendarDate {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: timeZone) ?? TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day], from: now)
        let today = CalendarDate(year: parts.year ?? 1970, month: parts.month ?? 1, day: parts.day ?? 2)
        return today?.adding(days: -1) ?? ReportDates.range.lowerBound
    }
}

extension MoneyRoutes {
    /// The money pages over `client`, with a report cache of their own.
    init(client: PostgresClient, audit: ConsoleAudit, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.init(
            reporter: RevenueReporter(client: client, logger: logger), comparer: AppleSalesComparer(client: client),
            importer: AppleSalesImporter(client: client),
            cache: ReportCache(clock: clock), audit: audit, clock: clock)
    }
}
