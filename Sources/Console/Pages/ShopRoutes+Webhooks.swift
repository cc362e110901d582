import Foundation
import Hummingbird
import Webhooks

/// `/shop/webhooks`: the endpoints, the failing ones, the newest attempts; an event and its attempts;
/// replaying an event or a time range (`WebhookStore.replay`, as `POST /api/v1/admin/webhooks/replay`
/// and `shopledger webhooks replay`); disabling an endpoint (after a confirmation step).
extension ShopRoutes {
    /// How the console's replay form names its fields, for the refusals' messages.
    static let replayFieldNames = WebhookStore.ReplaySelection.FieldNames(
        event: "event id", from: "from", to: "to", types: "types")

    func registerWebhooks(on group: RouterGroup<ConsoleContext>) {
        group.get("shop/webhooks") { request, context -> Response in
            let query = request.uri.queryParameters
            let notice: String? =
                switch query.get("done") {
                case "replay":
                    context.language.pick(
                        "Queued \(Int(query.get("queued") ?? "") ?? 0) deliveries again.",
                        "전송 \(Int(query.get("queued") ?? "") ?? 0)건을 다시 대기열에 넣었습니다.")
                case "disable": context.language.pick("Disabled.", "비활성화했습니다.")
                default: nil
                }
            return try await webhooksPage(context: context, notice: notice)
        }
        group.get("shop/webhooks/events") { request, context -> Response in
            let text = request.uri.queryParameters.get("id") ?? ""
            guard let id = WebhookEvent.eventId(parsing: text.trimmingCharacters(in: .whitespaces)) else {
                return Pages.error(
                    status: .badRequest, context: context,
                    message: context.language.pick(
                        "An event id is evt_ and a number.", "이벤트 ID는 evt_와 숫자입니다."))
            }
            return Response.redirect(to: "/shop/webhooks/events/\(id)")
        }
        group.get("shop/webhooks/events/:eventId") { _, context -> Response in
            guard let id = WebhookEvent.eventId(parsing: try context.parameters.require("eventId")),
                let event = try await webhooks.event(id)
            else { throw HTTPError(.notFound) }
            return eventPage(event, attempts: try await webhooks.attempts(of: id), context: context)
        }
        group.post("shop/webhooks/replay") { request, context -> Response in
            var request = request
            let session = try context.requireSession()
            let form = try await FormBody.read(&request)
            let endpointText = Self.field(form, "endpoint") ?? "all"
            let queued: Int
            let endpointId: Int64?
            do {
                if endpointText == "all" {
                    endpointId = nil
                } else if let id = Int64(endpointText), id > 0 {
                    endpointId = id
                } else {
                    throw WebhookError(.invalidInput, "choose an endpoint or all")
                }
                let selection = try WebhookStore.ReplaySelection(
                    event: Self.field(form, "event"), from: Self.field(form, "from"), to: Self.field(form, "to"),
                    types: try Self.field(form, "types").map { text throws(WebhookError) in
                        try WebhookEventType.parseList(text)
                    },
                    names: Self.replayFieldNames)
                queued = try await webhooks.replay(selection, endpointId: endpointId)
            } catch let error as WebhookError {
                return Self.refused(error.message, context: context)
            }
            let what =
                Self.field(form, "event")
                ?? "\(Self.field(form, "from") ?? "") – \(Self.field(form, "to") ?? "")"
                + (Self.field(form, "types").map { " (\($0))" } ?? "")
            try await audit.record(
                "webhook_replay", by: session.operatorAccount.name, address: context.address,
                target: endpointId.map { "endpoint \($0)" } ?? "every subscribed endpoint",
                detail: "\(what): queued \(queued)")
            return Response.redirect(to: "/shop/webhooks?done=replay&queued=\(queued)")
        }
        group.post("shop/webhooks/:endpointId/disable") { request, context -> Response in
            var request = request
            let session = try context.requireSession()
            guard let id = Int64(try context.parameters.require("endpointId")), id > 0 else {
                throw HTTPError(.notFound)
            }
            let form = try await FormBody.read(&request)
            let reason = form["reason"] ?? ""
            guard form["confirmed"] == "yes" else {
                return Self.confirmPage(
                    context: context, action: "/shop/webhooks/\(id)/disable",
                    question: context.language.pick(
                        "Disable webhook endpoint \(id)? Nothing more is sent to it; its queued events stay queued. The admin API and the CLI cannot enable it again.",
                        "웹훅 엔드포인트 \(id)을(를) 비활성화할까요? 더 이상 전송하지 않으며, 대기 중인 이벤트는 그대로 남습니다. 관리 API와 CLI로 다시 활성화할 수 없습니다."
                    ),
                    reason: reason, fields: [], back: "/shop/webhooks", danger: true)
            }
            do {
                _ = try await webhooks.disableEndpoint(id, actor: session.operatorAccount.name)
            } catch let error as WebhookError {
                return Self.refused(error.message, context: context)
            }
            try await audit.record(
                "webhook_disable", by: session.operatorAccount.name, address: context.address,
                target: "endpoint \(id)", detail: reason)
            return Response.redirect(to: "/shop/webhooks?done=disable")
        }
    }

    private func webhooksPage(context: ConsoleContext, notice: String?) async throws -> Response {
        let language = context.language
        async let endpointsRead = webhooks.endpoints()
        async let attemptsRead = webhooks.recentAttempts(limit: 50)
        let (endpoints, attempts) = try await (endpointsRead, attemptsRead)
        let rows: [HTML] = endpoints.map { endpoint in
            let state: String =
                endpoint.enabled
                ? language.pick("enabled", "활성")
                : language.pick(
                    "disabled by \(endpoint.disabledBy ?? "?")", "\(endpoint.disabledBy ?? "?")이(가) 비활성화함")
            let failing: HTML =
                endpoint.failingSince.map {
                    "<span class=\"error\">\(language.pick("failing since", "실패 중, 시작")) \(Pages.instant($0))</span>"
                } ?? ""
            let disable: HTML =
                endpoint.enabled
                ? """
                <form method="post" action="/shop/webhooks/\(endpoint.endpointId)/disable" class="inline">\(Pages.csrfField(context))<button type="submit" class="danger">\(language.pick("Disable endpoint \(endpoint.endpointId)…", "엔드포인트 \(endpoint.endpointId) 비활성화…"))</button></form>
                """
                : ""
            return """
                <tr><th scope="row">\(endpoint.endpointId)</th><td>\(endpoint.url)</td>
                <td>\(endpoint.events.map { $0.map(\.rawValue).joined(separator: ", ") } ?? language.pick("all", "전체"))</td>
                <td>\(state) \(failing)</td><td class="num">\(endpoint.consecutiveFailures)</td><td class="num">\(endpoint.pending)</td>
                <td>\(endpoint.lastDeliveredAt.map(Pages.instant) ?? "—")</td><td>\(disable)</td></tr>
                """
        }
        let failing = endpoints.filter { $0.failingSince != nil }
        let failingItems: [HTML] = failing.map { endpoint in
            let since = Pages.instant(endpoint.failingSince ?? Date())
            let count = endpoint.consecutiveFailures
            return """
                <li>\(endpoint.endpointId) · \(endpoint.url): \(language.pick("\(count) failed attempts in a row since \(since)", "\(since)부터 \(count)번 연속 실패")), \(language.pick("\(endpoint.pending) waiting", "\(endpoint.pending)건 대기"))</li>
                """
        }
        let failingList: HTML =
            failing.isEmpty
            ? "<p class=\"ok\">\(language.pick("No endpoint is failing.", "실패 중인 엔드포인트가 없습니다."))</p>"
            : "<ul id=\"failing\">\(failingItems)</ul>"
        let endpointOptions: [HTML] = endpoints.filter(\.enabled).map {
            "<option value=\"\($0.endpointId)\">\($0.endpointId) · \($0.url)</option>"
        }
        let types = WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")
        return Pages.page(
            title: language.pick("Webhooks", "웹훅"), context: context, path: "/shop",
            """
            \(Self.notice(notice))
            <p><a href="/shop">\(language.pick("← Shop", "← 상점"))</a></p>
            <h2>\(language.pick("Endpoints", "엔드포인트"))</h2>
            <table id="endpoints"><thead><tr><th scope="col">ID</th><th scope="col">URL</th>
            <th scope="col">\(language.pick("Events", "이벤트"))</th><th scope="col">\(language.pick("State", "상태"))</th>
            <th scope="col">\(language.pick("Failures in a row", "연속 실패"))</th><th scope="col">\(language.pick("Waiting", "대기"))</th>
            <th scope="col">\(language.pick("Last delivered", "마지막 전송"))</th><th scope="col">\(language.pick("Action", "작업"))</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            <p>\(Pages.prose(language.pick("Endpoints are added with `shopledger webhooks add` or the admin API (their signing secret is shown once).", "엔드포인트는 `shopledger webhooks add` 또는 관리 API로 추가합니다 (서명 비밀 값은 한 번만 표시됩니다).")))</p>
            <h2>\(language.pick("Failing endpoints", "실패 중인 엔드포인트"))</h2>
            \(failingList)
            <h2>\(language.pick("Replay", "재전송"))</h2>
            <p>\(language.pick("Queue one event again, or the events created from one instant (included) to another (excluded), optionally of some types only (\(types)). An event still queued for an endpoint is not queued twice.", "이벤트 하나, 또는 한 시각(포함)부터 다른 시각(제외)까지 만들어진 이벤트(원하면 일부 종류만: \(types))를 다시 대기열에 넣습니다. 이미 대기 중인 이벤트는 두 번 넣지 않습니다."))</p>
            <form method="post" action="/shop/webhooks/replay" class="stack">\(Pages.csrfField(context))
            <label for="replay-event">\(language.pick("Event id (evt_…), or leave empty and give a range", "이벤트 ID (evt_…), 또는 비우고 기간 입력"))</label>
            <input id="replay-event" name="event" placeholder="evt_123">
            <label for="replay-from">\(language.pick("From (ISO 8601, e.g. 2026-11-27T00:00:00Z)", "시작 (ISO 8601, 예: 2026-11-27T00:00:00Z)"))</label>
            <input id="replay-from" name="from">
            <label for="replay-to">\(language.pick("To (excluded)", "끝 (제외)"))</label>
            <input id="replay-to" name="to">
            <label for="replay-types">\(language.pick("Types (optional, comma-separated)", "종류 (선택, 쉼표로 구분)"))</label>
            <input id="replay-types" name="types">
            <label for="replay-endpoint">\(language.pick("To", "대상"))</label>
            <select id="replay-endpoint" name="endpoint"><option value="all">\(language.pick("every subscribed endpoint", "구독 중인 모든 엔드포인트"))</option>\(endpointOptions)</select>
            <button type="submit">\(language.pick("Replay", "재전송"))</button>
            </form>
            <h2>\(language.pick("An event", "이벤트 조회"))</h2>
            <form method="get" action="/shop/webhooks/events" class="row">
            <span class="field"><label for="event-id">\(language.pick("Event id", "이벤트 ID"))</label>
            <input id="event-id" name="id" placeholder="evt_123" required></span>
            <button type="submit">\(language.pick("Show", "보기"))</button>
            </form>
            <h2>\(language.pick("Recent attempts", "최근 전송 시도"))</h2>
            \(Self.attemptsTable(attempts, language: language, id: "attempts"))
            """)
    }

    private func eventPage(_ event: WebhookEvent, attempts: [WebhookAttempt], context: ConsoleContext) -> Response {
        let language = context.language
        let publicId = WebhookEvent.publicId(event.eventId)
        return Pages.page(
            title: language.pick("Webhook event \(publicId)", "웹훅 이벤트 \(publicId)"), context: context, path: "/shop",
            """
            <p><a href="/shop/webhooks">\(language.pick("← Webhooks", "← 웹훅"))</a></p>
            <dl class="facts">
            <dt>\(language.pick("Type", "종류"))</dt><dd>\(event.type.rawValue)</dd>
            <dt>uid</dt><dd><a href="\(CustomerRoutes.path(of: event.uid))">\(event.uid)</a></dd>
            <dt>\(language.pick("Created", "생성"))</dt><dd>\(Pages.instant(event.createdAt))</dd>
            </dl>
            <h2>\(language.pick("Body", "본문"))</h2>
            <pre>\(event.body)</pre>
            <form method="post" action="/shop/webhooks/replay" class="row">\(Pages.csrfField(context))
            <input type="hidden" name="event" value="\(publicId)">
            <input type="hidden" name="endpoint" value="all">
            <button type="submit">\(language.pick("Replay to every subscribed endpoint", "구독 중인 모든 엔드포인트로 재전송"))</button>
            </form>
            <h2>\(language.pick("Attempts", "전송 시도"))</h2>
            \(Self.attemptsTable(attempts, language: language, id: "event-attempts"))
            """)
    }

    static func attemptsTable(_ attempts: [WebhookAttempt], language: Language, id: String) -> HTML {
        guard !attempts.isEmpty else { return "<p>\(language.pick("None yet.", "아직 없습니다."))</p>" }
        let rows: [HTML] = attempts.map { attempt in
            let outcome: HTML =
                attempt.outcome == "delivered"
                ? "<span class=\"ok\">\(attempt.outcome)</span>" : "<span class=\"error\">\(attempt.outcome)</span>"
            return """
                <tr><td>\(Pages.instant(attempt.startedAt))</td><td class="num">\(attempt.endpointId)</td>
                <td><a href="/shop/webhooks/events/\(attempt.eventId)">\(WebhookEvent.publicId(attempt.eventId))</a></td>
                <td class="num">\(attempt.attempt)</td><td>\(outcome)</td><td class="num">\(attempt.statusCode.map(String.init) ?? "—")</td>
                <td class="num">\(attempt.durationMilliseconds) ms</td><td>\(attempt.error ?? "")</td></tr>
                """
        }
        return """
            <table id="\(id)"><thead><tr><th scope="col">\(language.pick("Started", "시작"))</th>
            <th scope="col">\(language.pick("Endpoint", "엔드포인트"))</th><th scope="col">\(language.pick("Event", "이벤트"))</th>
            <th scope="col">\(language.pick("Attempt", "시도"))</th><th scope="col">\(language.pick("Outcome", "결과"))</th>
            <th scope="col">\(language.pick("HTTP status", "HTTP 상태"))</th><th scope="col">\(language.pick("Duration", "소요 시간"))</th>
            <th scope="col">\(language.pick("Error", "오류"))</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            """
    }
}
