import CivilDates
import Foundation
import Reports

/// A revenue report a money page asks for: which report (a day, a range of days by day, week or month,
/// or a calendar month) in which time zone, as the console's GET forms spell it
/// (`kind=daily&date=2026-11-28&tz=Asia/Seoul`). The key of ``ReportCache``.
struct ReportRequest: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case daily(CalendarDate)
        case range(first: CalendarDate, last: CalendarDate, grouping: ReportGrouping)
        case month(ReportMonth)
    }

    var kind: Kind
    /// An IANA zone name (the report checks that the database knows it).
    var timeZone: String

    /// What was wrong with a request, in both languages.
    struct Refusal: Error, Sendable {
        let english: String
        let korean: String
    }

    /// Reads a request from the query's fields.
    static func parse(_ field: (String) -> String?) throws(Refusal) -> ReportRequest {
        let timeZone = (field("tz") ?? "").trimmingCharacters(in: .whitespaces)
        let zone = timeZone.isEmpty ? "UTC" : timeZone
        guard zone.utf8.count <= 64,
            zone.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.generalCategory != .control })
        else {
            throw Refusal(english: "The time zone is not a zone name.", korean: "시간대 이름이 올바르지 않습니다.")
        }
        switch field("kind") {
        case "daily":
            return ReportRequest(kind: .daily(try date(field("date"), "date", "날짜")), timeZone: zone)
        case "range":
            let first = try date(field("from"), "first day", "시작일")
            let last = try date(field("to"), "last day", "종료일")
            guard first <= last else {
                throw Refusal(
                    english: "The first day \(first) is after the last day \(last).",
                    korean: "시작일 \(first)이(가) 종료일 \(last)보다 늦습니다.")
            }
            guard let grouping = ReportGrouping(rawValue: field("by") ?? "day") else {
                throw Refusal(
                    english: "Divide the range by day, week or month.", korean: "기간은 일, 주 또는 월 단위로 나눕니다.")
            }
            return ReportRequest(kind: .range(first: first, last: last, grouping: grouping), timeZone: zone)
        case "month":
            guard let month = field("month").flatMap(ReportMonth.init) else {
                throw Refusal(
                    english: "Give the month as YYYY-MM (years 1970 to 9000).",
                    korean: "월은 YYYY-MM 형식으로 입력하세요 (1970년~9000년).")
            }
            return ReportRequest(kind: .month(month), timeZone: zone)
        default:
            throw Refusal(english: "Choose a daily, range or month report.", korean: "일간, 기간 또는 월간 보고서를 고르세요.")
        }
    }

    /// A date of the reports' range (``ReportDates/range``).
    static func date(_ text: String?, _ english: String, _ korean: String) throws(Refusal) -> CalendarDate {
        guard let text, let date = CalendarDate(text), ReportDates.range.contains(date) else {
            throw Refusal(
                english:
                    "Give the \(english) as YYYY-MM-DD, from \(ReportDates.range.lowerBound) to \(ReportDates.range.upperBound).",
                korean:
                    "\(korean)을(를) YYYY-MM-DD 형식으로 입력하세요 (\(ReportDates.range.lowerBound) ~ \(ReportDates.range.upperBound))."
            )
        }
        return date
    }

    /// The request as the query of a link to it.
    var query: String {
        var fields: [(String, String)]
        switch kind {
        case .daily(let date): fields = [("kind", "daily"), ("date", date.description)]
        case .range(let first, let last, let grouping):
            fields = [
                ("kind", "range"), ("from", first.description), ("to", last.description), ("by", grouping.rawValue),
            ]
        case .month(let month): fields = [("kind", "month"), ("month", month.description)]
        }
        fields.append(("tz", timeZone))
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
            .joined(separator: "&")
    }

    /// `daily 2026-11-28 Asia/Seoul`: what the audit records of a download.
    var description: String {
        switch kind {
        case .daily(let date): "daily \(date) \(timeZone)"
        case .range(let first, let last, let grouping): "range \(first) \(last) by \(grouping.rawValue) \(timeZone)"
        case .month(let month): "month \(month) \(timeZone)"
        }
    }

    /// The CSV's file name: `revenue-2026-11-28-Asia_Seoul.csv` (the report's folder name and its zone).
    func fileName(folder: String) -> String {
        let zone = String(timeZone.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" })
        return "revenue-\(folder)-\(zone).csv"
    }

    /// The report, made by the same ``RevenueReporter`` calls as `shopledger report daily|range|month`
    /// with the same options (its default commission, the period's reconciliation, no reporting currency).
    func make(with reporter: RevenueReporter) async throws -> RevenueReport {
        let options = ReportOptions(timeZone: timeZone)
        switch kind {
        case .daily(let date): return try await reporter.daily(date: date, options: options)
        case .range(let first, let last, let grouping):
            return try await reporter.range(from: first, through: last, by: grouping, options: options)
        case .month(let month): return try await reporter.month(month, options: options)
        }
    }
}
