import Foundation
import HTTPTypes
import Hummingbird

/// The console's page frame and its shared pieces. Every page is server-rendered HTML with no script.
enum Pages {
    /// A whole page: the header with the sections the operator's role may open, the language switch and
    /// sign-out, then `body`.
    static func page(
        title: String, context: ConsoleContext, path: String = "/", status: HTTPResponse.Status = .ok,
        _ body: HTML
    ) -> Response {
        let language = context.language
        var navigation: [HTML] = []
        if let session = context.session {
            let role = session.operatorAccount.role
            var links: [(String, String, String)] = [("/customers", "Customers", "고객")]
            if role >= .finance { links.append(("/money", "Money", "매출")) }
            if role >= .admin { links.append(("/shop", "Shop", "상점")) }
            navigation = links.map { link in
                let current = path.hasPrefix(link.0) ? HTML(trusted: " aria-current=\"page\"") : ""
                return "<li><a href=\"\(link.0)\"\(current)>\(language.pick(link.1, link.2))</a></li>"
            }
        }
        let other: Language = language == .ko ? .en : .ko
        let switchTarget =
            "/language?to=\(other.rawValue)&next="
            + (path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "%2F")
        let account: HTML
        if let session = context.session {
            account = """
                <span class="who">\(session.operatorAccount.name) · \(roleName(session.operatorAccount.role, language))</span>
                <form method="post" action="/logout" class="inline">\(csrfField(context))<button type="submit">\(language.pick("Sign out", "로그아웃"))</button></form>
                """
        } else {
            account = ""
        }
        let html: HTML = """
            <!DOCTYPE html>
            <html lang="\(language.rawValue)">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · ShopLedger</title>
            <link rel="stylesheet" href="/assets/console.css">
            </head>
            <body>
            <header>
            <a class="brand" href="/">ShopLedger</a>
            <nav aria-label="\(language.pick("Sections", "메뉴"))"><ul>\(navigation)</ul></nav>
            <div class="account">
            <a href="\(switchTarget)" lang="\(other.rawValue)" hreflang="\(other.rawValue)">\(other == .ko ? "한국어" : "English")</a>
            \(account)
            </div>
            </header>
            <main>
            <h1>\(title)</h1>
            \(body)
            </main>
            </body>
            </html>
            """
        return Response.html(html, status: status)
    }

    static func error(status: HTTPResponse.Status, context: ConsoleContext, message: String? = nil) -> Response {
        let language = context.language
        let text =
            message
            ?? {
                switch status {
                case .notFound: language.pick("There is no such page.", "그런 페이지가 없습니다.")
                case .forbidden: language.pick("You may not open this page.", "이 페이지를 열 권한이 없습니다.")
                default: language.pick("The request could not be served.", "요청을 처리할 수 없습니다.")
                }
            }()
        return page(
            title: "\(status.code) \(statusName(status, language))", context: context, status: status,
            "<p class=\"error\" role=\"alert\">\(text)</p><p><a href=\"/\">\(language.pick("Back to the console", "콘솔로 돌아가기"))</a></p>"
        )
    }

    /// The status's reason phrase in the page's language (RFC 9110's in English).
    static func statusName(_ status: HTTPResponse.Status, _ language: Language) -> String {
        guard language == .ko else { return status.reasonPhrase }
        switch status.code {
        case 400: return "잘못된 요청"
        case 401: return "인증 실패"
        case 403: return "권한 없음"
        case 404: return "찾을 수 없음"
        case 405: return "허용되지 않는 메서드"
        case 422: return "처리할 수 없는 요청"
        case 429: return "요청이 너무 많음"
        case 500: return "서버 오류"
        case 501: return "구현되지 않음"
        case 503: return "서비스를 사용할 수 없음"
        default: return status.reasonPhrase
        }
    }

    /// The hidden field every form of a session carries.
    static func csrfField(_ context: ConsoleContext) -> HTML {
        guard let session = context.session else { return "" }
        return "<input type=\"hidden\" name=\"csrf\" value=\"\(session.csrfToken)\">"
    }

    static func roleName(_ role: Operator.Role, _ language: Language) -> String {
        switch role {
        case .support: language.pick("support", "고객 지원")
        case .finance: language.pick("finance", "재무")
        case .admin: language.pick("admin", "관리자")
        }
    }

    /// An instant as the console shows it: UTC, to the second.
    static func instant(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withSpaceBetweenDateAndTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date) + " UTC"
    }

    /// Milliunits as the currency's amount: 2,500,000 KRW milli is "2,500 KRW"; 990 USD milli "0.99 USD".
    static func money(milli: Int64?, currency: String?) -> String {
        guard let milli, let currency else { return "—" }
        let negative = milli < 0
        let magnitude = milli.magnitude
        let whole = magnitude / 1000
        let fraction = magnitude % 1000
        var grouped = ""
        for (offset, digit) in String(whole).reversed().enumerated() {
            if offset > 0, offset % 3 == 0 { grouped.insert(",", at: grouped.startIndex) }
            grouped.insert(digit, at: grouped.startIndex)
        }
        var text = (negative ? "-" : "") + grouped
        if fraction != 0 {
            var digits = String(fraction)
            digits = String(repeating: "0", count: 3 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            if digits.count < 2 { digits += "0" }
            text += "." + digits
        }
        return "\(text) \(currency)"
    }
}
