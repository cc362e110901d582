import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// On every console response: the page's language (cookie, else `Accept-Language`), and the security
/// headers: a strict Content-Security-Policy (no script, styles from this server only, forms posting to
/// it only, never framed), no caching, no sniffing, no referrer.
struct SecurityHeadersMiddleware: RouterMiddleware {
    typealias Context = ConsoleContext

    let logger: Logger

    /// What every page may load. A page with inline style of its own (the revenue report) sets its own
    /// policy naming that style's hash; this one is set only when the page set none.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        + "frame-ancestors 'none'; base-uri 'none'"

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.language =
            request.cookieValue(ConsoleCookies.language).flatMap(Language.init(rawValue:))
            ?? Language.negotiate(acceptLanguage: request.headers[.acceptLanguage])
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError {
            response = Pages.error(status: error.status, context: context)
        } catch {
            // What a page could not do (the database, say) is logged here and answered with a page, not
            // with the error's text: it may name tables and values.
            logger.error(
                "console request failed",
                metadata: ["path": "\(request.uri.path)", "operator": "\(context.operatorName)", "error": "\(error)"])
            response = Pages.error(status: .internalServerError, context: context)
        }
        if response.headers[.contentSecurityPolicy] == nil {
            response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        }
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        response.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }
}

/// The middleware of the signed-in pages: the session cookie must name a live session (else the browser
/// is sent to sign in), and every POST must carry the session's CSRF token in its form (else 403 and
/// nothing is done).
struct SessionMiddleware: RouterMiddleware {
    typealias Context = ConsoleContext

    let sessions: ConsoleSessions
    let logger: Logger

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        var request = request
        guard let token = request.cookieValue(ConsoleCookies.session),
            let session = try await sessions.find(token: token)
        else {
            var target = "/login"
            if request.method == .get, let path = request.uri.path.isEmpty ? nil : request.uri.description,
                LocalPath.isSafe(path), path != "/"
            {
                target += "?next=" + (path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            }
            var response = Response.redirect(to: target)
            response.headers.append(ConsoleCookies.clear(ConsoleCookies.session))
            return response
        }
        context.session = session
        if request.method == .post {
            let form = try await FormBody.read(&request)
            guard let sent = form["csrf"], ConsoleSessions.same(sent, session.csrfToken) else {
                return Pages.error(
                    status: .forbidden, context: context,
                    message: context.language.pick(
                        "This form is not from this console session (its CSRF token is missing or old). Nothing was done.",
                        "이 양식은 현재 콘솔 세션의 것이 아닙니다 (CSRF 토큰이 없거나 오래되었습니다). 아무것도 처리하지 않았습니다."
                    ))
            }
        }
        let started = ContinuousClock.now
        let response = try await next(request, context)
        // One line per signed-in request, with who made it (what it changed is in console_events).
        logger.info(
            "console request",
            metadata: [
                "method": "\(request.method.rawValue)", "path": "\(request.uri.path)",
                "status": "\(response.status.code)", "operator": "\(session.operatorAccount.name)",
                "duration_ms": "\((ContinuousClock.now - started).milliseconds)",
            ])
        return response
    }
}

extension Duration {
    fileprivate var milliseconds: String {
        let (seconds, attoseconds) = components
        return String(format: "%.3f", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }
}

/// Pages for a role and the ones above it (``Operator/Role``): others get 403.
struct RoleMiddleware: RouterMiddleware {
    typealias Context = ConsoleContext

    let minimum: Operator.Role

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let session = context.session, session.operatorAccount.role >= minimum else {
            return Pages.error(
                status: .forbidden, context: context,
                message: context.language.pick(
                    "This page is for the \(minimum.rawValue) role and above.",
                    "이 페이지는 \(Pages.roleName(minimum, .ko)) 역할 이상만 볼 수 있습니다."))
        }
        return try await next(request, context)
    }
}

/// A path of this console to go back to after sign-in: relative, never `//host` or a scheme.
enum LocalPath {
    static func isSafe(_ path: String) -> Bool {
        path.hasPrefix("/") && !path.hasPrefix("//") && !path.hasPrefix("/\\")
            && !path.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}

/// The console's cookies: the session (HttpOnly, Secure, SameSite=Strict, path /), the language, and the
/// sign-in form's token (the double-submit CSRF token of a browser not yet signed in).
enum ConsoleCookies {
    static let session = "shopledger_console"
    static let language = "shopledger_console_lang"
    static let signInForm = "shopledger_console_login"

    static func set(_ name: String, _ value: String, maxAge: Int? = nil) -> HTTPField {
        var text = "\(name)=\(value); Path=/; Secure; HttpOnly; SameSite=Strict"
        if let maxAge { text += "; Max-Age=\(maxAge)" }
        return HTTPField(name: .setCookie, value: text)
    }

    static func clear(_ name: String) -> HTTPField {
        HTTPField(name: .setCookie, value: "\(name)=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0")
    }
}

extension Request {
    /// The value of cookie `name` from the `Cookie` header(s).
    func cookieValue(_ name: String) -> String? {
        for header in headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }
}

extension Response {
    static func redirect(to location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    static func html(_ html: HTML, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html.text)))
    }
}
