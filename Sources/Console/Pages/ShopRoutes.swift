import Foundation
import Hummingbird
import Ledger
import Postgres
import Reports
import Webhooks

/// The shop section (admin): the catalog (add, rename, retire through `CatalogStore`'s admin calls, as
/// `/api/v1/admin/catalog` and `shopledger catalog`), webhook endpoints (through `WebhookStore`, as
/// `/api/v1/admin/webhooks` and `shopledger webhooks`), what the App Store sync left in the database,
/// and the ledger: reconciliation (`Reconciler` with `ReconciliationChecks.all`, as `shopledger
/// reconcile`) and the standby (`StreamingReplication`, as `shopledger standby status`). Every action
/// is recorded in `console_events` with the operator's name, and acts under that name.
struct ShopRoutes: Sendable {
    let client: PostgresClient
    let catalog: CatalogStore
    let webhooks: WebhookStore
    let syncRecords: AppleSyncRecords
    let audit: ConsoleAudit

    init(client: PostgresClient, audit: ConsoleAudit) {
        self.client = client
        self.catalog = CatalogStore(client: client)
        self.webhooks = WebhookStore(client: client)
        self.syncRecords = AppleSyncRecords(client: client)
        self.audit = audit
    }

    func register(on group: RouterGroup<ConsoleContext>) {
        group.get("shop") { _, context -> Response in
            let language = context.language
            let sections: [(String, String, String, String, String)] = [
                (
                    "/shop/catalog", "Catalog", "카탈로그", "Add, rename and retire items.",
                    "아이템을 추가하고, 이름을 바꾸고, 판매를 종료합니다."
                ),
                (
                    "/shop/webhooks", "Webhooks", "웹훅", "Endpoints, the failing ones, recent attempts, replays.",
                    "엔드포인트, 실패 중인 엔드포인트, 최근 전송 시도, 재전송."
                ),
                (
                    "/shop/apple-sync", "App Store sync", "App Store 동기화",
                    "What the sync with Apple left in the database.", "Apple과의 동기화가 데이터베이스에 남긴 기록."
                ),
                (
                    "/shop/ledger", "Ledger", "원장", "Reconciliation of the ledger and the standby's status.",
                    "원장 대사와 대기 서버(standby) 상태."
                ),
            ]
            let items: [HTML] = sections.map {
                "<li><a href=\"\($0.0)\">\(language.pick($0.1, $0.2))</a>: \(language.pick($0.3, $0.4))</li>"
            }
            return Pages.page(
                title: language.pick("Shop", "상점"), context: context, path: "/shop", "<ul>\(items)</ul>")
        }
        registerCatalog(on: group)
        registerWebhooks(on: group)
        registerOperations(on: group)
    }

    /// The step before an action: what it will do, the reason to record, and the same form again with
    /// `confirmed=yes`.
    static func confirmPage(
        context: ConsoleContext, action: String, question: String, reason: String, fields: [(String, String)],
        back: String, danger: Bool = false
    ) -> Response {
        let language = context.language
        let hidden: [HTML] = fields.map { "<input type=\"hidden\" name=\"\($0.0)\" value=\"\($0.1)\">" }
        let button: HTML = danger ? "<button type=\"submit\" class=\"danger\">" : "<button type=\"submit\">"
        return Pages.page(
            title: language.pick("Confirm", "확인"), context: context, path: "/shop",
            """
            <p>\(question)</p>
            <form method="post" action="\(action)" class="stack">\(Pages.csrfField(context))
            \(hidden)
            <input type="hidden" name="confirmed" value="yes">
            <label for="reason">\(language.pick("Reason (recorded with your name)", "사유 (이름과 함께 기록됩니다)"))</label>
            <input id="reason" name="reason" value="\(reason)" required>
            \(button)\(language.pick("Confirm", "확인"))</button>
            </form>
            <p><a href="\(back)">\(language.pick("Cancel", "취소"))</a></p>
            """)
    }

    /// A refusal of the domain (bad input, a taken index, a disabled endpoint): its message, nothing done.
    static func refused(_ message: String, context: ConsoleContext) -> Response {
        Pages.error(
            status: .unprocessableContent, context: context,
            message: message + context.language.pick(" Nothing was changed.", " 아무것도 바꾸지 않았습니다."))
    }

    /// `?done=…` as a status line.
    static func notice(_ text: String?) -> HTML {
        guard let text, !text.isEmpty else { return "" }
        return "<p class=\"ok\" role=\"status\">\(text)</p>"
    }

    /// A form field, trimmed; nil when empty.
    static func field(_ form: FormBody, _ name: String) -> String? {
        guard let value = form[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            return nil
        }
        return value
    }
}
