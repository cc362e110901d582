import Foundation
import Hummingbird

/// `/login`, `/logout`, `/language` and the stylesheet: the pages a browser reaches before signing in.
struct SignInRoutes: Sendable {
    let signIn: SignIn

    func register(on router: Router<ConsoleContext>) {
        router.get("assets/console.css") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "public, max-age=3600"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: ConsoleStyleSheet.css)))
        }
        router.get("language") { request, context -> Response in
            let target = request.uri.queryParameters.get("next").flatMap { LocalPath.isSafe($0) ? $0 : nil } ?? "/"
            var response = Response.redirect(to: target)
            if let language = request.uri.queryParameters.get("to").flatMap(Language.init(rawValue:)) {
                response.headers.append(
                    ConsoleCookies.set(ConsoleCookies.language, language.rawValue, maxAge: 365 * 86400))
            }
            return response
        }
        router.get("login") { request, context -> Response in
            let next = request.uri.queryParameters.get("next").flatMap { LocalPath.isSafe($0) ? $0 : nil }
            return loginPage(context: context, next: next, message: nil)
        }
        router.post("login") { request, context -> Response in
            var request = request
            let form = try await FormBody.read(&request)
            let next = form["next"].flatMap { LocalPath.isSafe($0) && !$0.isEmpty ? $0 : nil }
            // A sign-in form is the browser's own only when its token matches the cookie set with it.
            guard let sent = form["form_token"], let cookie = request.cookieValue(ConsoleCookies.signInForm),
                ConsoleSessions.same(sent, cookie)
            else {
                return loginPage(
                    context: context, next: next, status: .forbidden,
                    message: context.language.pick(
                        "The sign-in form had expired. Please try again.", "로그인 양식이 만료되었습니다. 다시 시도해 주세요."))
            }
            let outcome = try await signIn.attempt(
                name: form["name"] ?? "", password: form["password"] ?? "", address: context.address)
            switch outcome {
            case .signedIn(let token, _):
                var response = Response.redirect(to: next ?? "/")
                response.headers.append(ConsoleCookies.set(ConsoleCookies.session, token))
                response.headers.append(ConsoleCookies.clear(ConsoleCookies.signInForm))
                return response
            case .refused:
                return loginPage(
                    context: context, next: next, status: .unauthorized,
                    message: context.language.pick(
                        "Wrong name or password.", "이름 또는 비밀번호가 올바르지 않습니다."))
            case .limited:
                return loginPage(
                    context: context, next: next, status: .tooManyRequests,
                    message: context.language.pick(
                        "Too many sign-in attempts. Wait 15 minutes, or ask an admin to reset your password.",
                        "로그인 시도가 너무 많습니다. 15분 후에 다시 시도하거나 관리자에게 비밀번호 재설정을 요청하세요."))
            }
        }
    }

    private func loginPage(
        context: ConsoleContext, next: String?, status: HTTPResponse.Status = .ok, message: String?
    ) -> Response {
        let language = context.language
        let formToken = ConsoleSessions.randomToken()
        let alert: HTML = message.map { "<p class=\"error\" role=\"alert\">\($0)</p>" } ?? ""
        var response = Pages.page(
            title: language.pick("Sign in", "로그인"), context: context, path: "/login", status: status,
            """
            \(alert)
            <form method="post" action="/login" class="stack">
            <input type="hidden" name="form_token" value="\(formToken)">
            <input type="hidden" name="next" value="\(next ?? "")">
            <label for="name">\(language.pick("Operator name", "운영자 이름"))</label>
            <input id="name" name="name" autocomplete="username" required autofocus>
            <label for="password">\(language.pick("Password", "비밀번호"))</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required>
            <button type="submit">\(language.pick("Sign in", "로그인"))</button>
            </form>
            """)
        response.headers.append(ConsoleCookies.set(ConsoleCookies.signInForm, formToken, maxAge: 3600))
        return response
    }
}

/// Sign-out, for a signed-in session (the session group checks its CSRF token).
struct SignOutRoutes: Sendable {
    let sessions: ConsoleSessions
    let audit: ConsoleAudit

    func register(on group: RouterGroup<ConsoleContext>) {
        group.post("logout") { _, context -> Response in
            let session = try context.requireSession()
            try await sessions.end(session)
            try await audit.record("logout", by: session.operatorAccount.name, address: context.address)
            var response = Response.redirect(to: "/login")
            response.headers.append(ConsoleCookies.clear(ConsoleCookies.session))
            return response
        }
        group.get("/") { _, _ in Response.redirect(to: "/customers") }
    }
}
