import Foundation
import Hummingbird
import Ledger

/// The customers section (support and above): find a user, see their timeline and what they own, grant
/// or revoke an item with a reason (each after a confirmation step), through the same ledger calls as
/// `/api/v1/admin/grants` and `shopledger admin grant`.
struct CustomerRoutes: Sendable {
    let ledger: LedgerStore
    let catalog: CatalogStore
    let directory: CustomerDirectory
    let audit: ConsoleAudit
    let appleHistory: AppleHistory?

    func register(on group: RouterGroup<ConsoleContext>) {
        group.get("customers") { request, context -> Response in
            let query = request.uri.queryParameters.get("q") ?? ""
            let matches = query.isEmpty ? [] : try await directory.search(query)
            if matches.count == 1 || Set(matches.map(\.uid)).count == 1, let match = matches.first {
                return Response.redirect(to: Self.path(of: match.uid))
            }
            return searchPage(context: context, query: query, matches: matches)
        }
        group.get("customers/:uid") { request, context -> Response in
            let uid = try Self.uid(context)
            guard let user = try await ledger.user(uid) else {
                return Pages.error(
                    status: .notFound, context: context,
                    message: context.language.pick("No user has uid \(uid).", "uid가 \(uid)인 사용자가 없습니다."))
            }
            let notice = request.uri.queryParameters.get("done")
            return try await customerPage(user: user, context: context, notice: notice)
        }
        group.post("customers/:uid/grants") { request, context -> Response in
            var request = request
            let session = try context.requireSession()
            let uid = try Self.uid(context)
            let form = try await FormBody.read(&request)
            guard let item = Self.item(form["item"]) else {
                return Pages.error(
                    status: .badRequest, context: context,
                    message: context.language.pick("Choose an item.", "아이템을 고르세요."))
            }
            let reason = form["reason"] ?? ""
            let transactionId = form["transaction_id"].flatMap { $0.isEmpty ? nil : $0 }
            guard form["confirmed"] == "yes" else {
                return confirmPage(
                    context: context, action: Self.path(of: uid) + "/grants",
                    question: context.language.pick(
                        "Grant \(item) to \(uid)?", "\(uid) 사용자에게 \(item) 아이템을 지급할까요?"),
                    reason: reason,
                    fields: [("item", "\(item.kind.rawValue):\(item.index)"), ("transaction_id", transactionId ?? "")],
                    back: Self.path(of: uid))
            }
            do {
                let action = try await ledger.grantCompensation(
                    item, to: uid,
                    SupportRequest(actor: session.operatorAccount.name, reason: reason, transactionId: transactionId))
                try await audit.record(
                    "support_grant", by: session.operatorAccount.name, address: context.address, target: uid,
                    detail: "\(item) action \(action.actionId): \(reason)")
                return Response.redirect(to: Self.path(of: uid) + "?done=grant")
            } catch let error as LedgerError {
                return Pages.error(status: .unprocessableContent, context: context, message: error.message)
            }
        }
        group.post("customers/:uid/grants/:grantId/revoke") { request, context -> Response in
            var request = request
            let session = try context.requireSession()
            let uid = try Self.uid(context)
            guard let grantId = Int64(try context.parameters.require("grantId")), grantId > 0 else {
                throw HTTPError(.notFound)
            }
            let form = try await FormBody.read(&request)
            let reason = form["reason"] ?? ""
            guard form["confirmed"] == "yes" else {
                return confirmPage(
                    context: context, action: Self.path(of: uid) + "/grants/\(grantId)/revoke",
                    question: context.language.pick(
                        "Revoke grant \(grantId) of \(uid)?", "\(uid) 사용자의 지급 \(grantId)을(를) 회수할까요?"),
                    reason: reason, fields: [], back: Self.path(of: uid))
            }
            // The page names the customer: a grant of someone else's is not revoked from it.
            guard
                try await ledger.supportActions(of: uid).contains(where: { $0.actionId == grantId && $0.kind == .grant }
                )
            else {
                return Pages.error(
                    status: .notFound, context: context,
                    message: context.language.pick(
                        "\(uid) has no support grant \(grantId).", "\(uid) 사용자에게 지원 지급 \(grantId)이(가) 없습니다."))
            }
            do {
                let action = try await ledger.revokeCompensation(
                    grantId, SupportRequest(actor: session.operatorAccount.name, reason: reason))
                try await audit.record(
                    "support_revoke", by: session.operatorAccount.name, address: context.address, target: uid,
                    detail: "grant \(grantId) action \(action.actionId): \(reason)")
                return Response.redirect(to: Self.path(of: uid) + "?done=revoke")
            } catch let error as LedgerError {
                return Pages.error(status: .unprocessableContent, context: context, message: error.message)
            }
        }
        group.post("customers/:uid/apple-history") { _, context -> Response in
            let session = try context.requireSession()
            let uid = try Self.uid(context)
            guard let appleHistory else {
                return Pages.error(
                    status: .notImplemented, context: context,
                    message: context.language.pick(
                        "Apple's App Store Server API is not configured on this server.",
                        "이 서버에는 App Store Server API가 설정되어 있지 않습니다."))
            }
            try await audit.record(
                "apple_history", by: session.operatorAccount.name, address: context.address, target: uid)
            let result = await appleHistory.history(of: uid)
            return Pages.page(
                title: context.language.pick("What Apple reports", "Apple 기록"), context: context,
                path: "/customers",
                """
                \(AppleHistory.render(result, language: context.language))
                <p><a href="\(Self.path(of: uid))">\(context.language.pick("Back to the customer", "고객으로 돌아가기"))</a></p>
                """)
        }
    }

    static func path(of uid: String) -> String {
        "/customers/" + (uid.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? uid)
    }

    static func uid(_ context: ConsoleContext) throws -> String {
        let raw = try context.parameters.require("uid")
        return raw.removingPercentEncoding ?? raw
    }

    /// `face:3` or `background:2`.
    static func item(_ text: String?) -> ItemID? {
        guard let parts = text?.split(separator: ":"), parts.count == 2,
            let kind = ItemKind(rawValue: String(parts[0])), let index = Int(parts[1]), index > 0, index < 10_000
        else { return nil }
        return ItemID(kind: kind, index: index)
    }

    private func searchPage(context: ConsoleContext, query: String, matches: [CustomerDirectory.Match]) -> Response {
        let language = context.language
        var results: HTML = ""
        if !query.isEmpty {
            if matches.isEmpty {
                results =
                    "<p role=\"status\">\(language.pick("Nobody matches “\(query)”.", "“\(query)”와(과) 일치하는 사용자가 없습니다."))</p>"
            } else {
                let rows: [HTML] = matches.map {
                    "<tr><td><a href=\"\(Self.path(of: $0.uid))\">\($0.uid)</a></td><td>\($0.matchedBy)</td></tr>"
                }
                results = """
                    <table><thead><tr><th scope="col">uid</th><th scope="col">\(language.pick("Matched by", "일치 항목"))</th></tr></thead>
                    <tbody>\(rows)</tbody></table>
                    """
            }
        }
        return Pages.page(
            title: language.pick("Customers", "고객"), context: context, path: "/customers",
            """
            <form method="get" action="/customers" class="row" role="search">
            <label for="q">\(language.pick("uid, transaction id, original transaction id or app account token", "uid, 거래 ID, 원거래 ID 또는 앱 계정 토큰"))
            <input id="q" name="q" value="\(query)" size="44" required></label>
            <button type="submit">\(language.pick("Find", "찾기"))</button>
            </form>
            \(results)
            """)
    }

    private func customerPage(user: User, context: ConsoleContext, notice: String?) async throws -> Response {
        let language = context.language
        let uid = user.uid
        async let inventoryRead = ledger.inventory(of: uid)
        async let timelineRead = directory.timeline(of: uid)
        async let itemsRead = catalog.allItems()
        let (inventory, timeline, items) = try await (inventoryRead, timelineRead, itemsRead)
        let names = Dictionary(items.map { ($0.id, language == .ko ? $0.name : ($0.nameEn ?? $0.name)) }) { a, _ in a }
        func itemName(_ item: ItemID) -> String { "\(item) · \(names[item] ?? "?")" }
        let owned: [HTML] =
            inventory.faces.map { ItemID(kind: .face, index: $0) }.map { "<li>\(itemName($0))</li>" }
            + inventory.backgrounds.map { ItemID(kind: .background, index: $0) }.map { "<li>\(itemName($0))</li>" }
        let options: [HTML] = items.filter { !$0.isFree && !inventory.owns($0.id) }.map {
            "<option value=\"\($0.kind.rawValue):\($0.index)\">\(itemName($0.id))</option>"
        }
        let rows: [HTML] = timeline.map { event in
            var action: HTML = ""
            if event.kind == "support_grant", let grantId = event.reference {
                action =
                    event.revoked
                    ? "<span class=\"muted\">\(language.pick("revoked", "회수됨"))</span>"
                    : """
                    <form method="post" action="\(Self.path(of: uid))/grants/\(grantId)/revoke" class="row">
                    \(Pages.csrfField(context))
                    <label>\(language.pick("Reason", "사유")) <input name="reason" required size="18"></label>
                    <button type="submit" class="danger">\(language.pick("Revoke", "회수"))</button>
                    </form>
                    """
            }
            let what = [event.productId, event.item.map { ItemID.parse($0).map(itemName) ?? $0 }].compactMap { $0 }
                .joined(separator: " · ")
            let who = [event.actor, event.detail].compactMap { $0 }.joined(separator: ": ")
            return """
                <tr><td>\(Pages.instant(event.at))</td><td><span class="tag">\(Self.kindName(event.kind, language))</span></td>
                <td>\(event.transactionId)\(event.environment.map { " (\($0))" })</td><td>\(what)</td>
                <td class="num">\(event.priceMilli == nil ? "" : Pages.money(milli: event.priceMilli, currency: event.currency))</td>
                <td>\(who)</td><td>\(action)</td></tr>
                """
        }
        let done: HTML =
            switch notice {
            case "grant": "<p class=\"ok\" role=\"status\">\(language.pick("Granted.", "지급했습니다."))</p>"
            case "revoke": "<p class=\"ok\" role=\"status\">\(language.pick("Revoked.", "회수했습니다."))</p>"
            default: ""
            }
        let apple: HTML =
            appleHistory == nil
            ? ""
            : """
            <form method="post" action="\(Self.path(of: uid))/apple-history" class="row">\(Pages.csrfField(context))
            <button type="submit">\(language.pick("Ask Apple for this user's purchase history", "Apple에 이 사용자의 구매 기록 요청"))</button>
            </form>
            """
        return Pages.page(
            title: language.pick("Customer \(uid)", "고객 \(uid)"), context: context, path: "/customers",
            """
            \(done)
            <dl class="facts">
            <dt>uid</dt><dd>\(uid)</dd>
            <dt>\(language.pick("Registered", "가입"))</dt><dd>\(Pages.instant(user.registeredAt))</dd>
            <dt>\(language.pick("Equipped", "착용"))</dt><dd>face \(user.equipped.face) · background \(user.equipped.background)</dd>
            </dl>
            <h2>\(language.pick("Owns now", "보유 아이템"))</h2>
            <ul id="owned">\(owned)</ul>
            <h2>\(language.pick("Grant an item", "아이템 지급"))</h2>
            <form method="post" action="\(Self.path(of: uid))/grants" class="row">\(Pages.csrfField(context))
            <label>\(language.pick("Item", "아이템")) <select name="item" required>\(options)</select></label>
            <label>\(language.pick("Reason", "사유")) <input name="reason" required size="30"></label>
            <label>\(language.pick("About purchase (optional)", "관련 거래 (선택)")) <input name="transaction_id" size="20"></label>
            <button type="submit">\(language.pick("Grant…", "지급…"))</button>
            </form>
            \(apple)
            <h2>\(language.pick("Timeline", "타임라인"))</h2>
            <table id="timeline"><thead><tr><th scope="col">\(language.pick("When", "시각"))</th><th scope="col">\(language.pick("What", "종류"))</th>
            <th scope="col">\(language.pick("Transaction", "거래"))</th><th scope="col">\(language.pick("Item", "아이템"))</th>
            <th scope="col">\(language.pick("Price", "가격"))</th><th scope="col">\(language.pick("Who, why", "담당, 사유"))</th><th scope="col">\(language.pick("Action", "작업"))</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            """)
    }

    private func confirmPage(
        context: ConsoleContext, action: String, question: String, reason: String, fields: [(String, String)],
        back: String
    ) -> Response {
        let language = context.language
        let hidden: [HTML] = fields.map { "<input type=\"hidden\" name=\"\($0.0)\" value=\"\($0.1)\">" }
        return Pages.page(
            title: language.pick("Confirm", "확인"), context: context, path: "/customers",
            """
            <p>\(question)</p>
            <form method="post" action="\(action)" class="stack">\(Pages.csrfField(context))
            \(hidden)
            <input type="hidden" name="confirmed" value="yes">
            <label for="reason">\(language.pick("Reason (recorded with your name)", "사유 (이름과 함께 기록됩니다)"))</label>
            <input id="reason" name="reason" value="\(reason)" required>
            <button type="submit">\(language.pick("Confirm", "확인"))</button>
            </form>
            <p><a href="\(back)">\(language.pick("Cancel", "취소"))</a></p>
            """)
    }

    static func kindName(_ kind: String, _ language: Language) -> String {
        switch kind {
        case "purchase": language.pick("purchase", "구매")
        case "refund": language.pick("refund", "환불")
        case "refund_reversal": language.pick("refund reversed", "환불 취소")
        case "family_revoke": language.pick("family sharing ended", "가족 공유 해제")
        case "support_grant": language.pick("support grant", "지원 지급")
        case "support_revoke": language.pick("support revoke", "지원 회수")
        case "price_learned": language.pick("price learned", "가격 확인")
        case "webhook": language.pick("webhook", "웹훅")
        default: kind
        }
    }
}

extension ItemID {
    /// `face 3` as the timeline's SQL writes it.
    static func parse(_ text: String) -> ItemID? {
        let parts = text.split(separator: " ")
        guard parts.count == 2, let kind = ItemKind(rawValue: String(parts[0])), let index = Int(parts[1]) else {
            return nil
        }
        return ItemID(kind: kind, index: index)
    }
}
