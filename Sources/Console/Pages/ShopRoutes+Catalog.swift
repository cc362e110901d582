import Foundation
import Hummingbird
import Ledger

/// `/shop/catalog`: every item; add one; rename or retire one (retiring after a confirmation step).
extension ShopRoutes {
    func registerCatalog(on group: RouterGroup<ConsoleContext>) {
        group.get("shop/catalog") { request, context -> Response in
            try await catalogPage(context: context, done: request.uri.queryParameters.get("done"))
        }
        group.get("shop/catalog/:kind/:index") { _, context -> Response in
            let item = try Self.item(context)
            guard let found = try await catalog.allItems().first(where: { $0.id == item }) else {
                throw HTTPError(.notFound)
            }
            return itemPage(found, context: context)
        }
        group.post("shop/catalog") { request, context -> Response in
            var request = request
            let session = try context.requireSession()
            let form = try await FormBody.read(&request)
            let actor = session.operatorAccount.name
            let change: CatalogChange
            do {
                guard let kind = form["kind"].flatMap(ItemKind.init(rawValue:)),
                    let index = form["index"].flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
                else { throw LedgerError(.invalidInput, "choose a kind and give an index") }
                let new = NewCatalogItem(
                    item: ItemID(kind: kind, index: index), productId: Self.field(form, "product_id") ?? "",
                    name: Self.field(form, "name") ?? "", nameEn: Self.field(form, "name_en") ?? "",
                    description: Self.field(form, "description") ?? "",
                    price: try CatalogRules.price(
                        Self.field(form, "price") ?? "", currency: Self.field(form, "currency") ?? ""))
                change = try await catalog.add(new, SupportRequest(actor: actor, reason: form["reason"] ?? ""))
            } catch let error as LedgerError {
                return Self.refused(error.message, context: context)
            }
            try await audit.record(
                "catalog_add", by: actor, address: context.address, target: "\(change.item.id)",
                detail:
                    "change \(change.changeId): \(change.item.productId ?? "") \(change.item.name): \(change.reason)")
            return Response.redirect(to: "/shop/catalog?done=add")
        }
        group.post("shop/catalog/:kind/:index/rename") { request, context -> Response in
            var request = request
            let session = try context.requireSession()
            let item = try Self.item(context)
            let form = try await FormBody.read(&request)
            let actor = session.operatorAccount.name
            let change: CatalogChange
            do {
                change = try await catalog.rename(
                    item, name: Self.field(form, "name"), nameEn: Self.field(form, "name_en"),
                    SupportRequest(actor: actor, reason: form["reason"] ?? ""))
            } catch let error as LedgerError {
                return Self.refused(error.message, context: context)
            }
            try await audit.record(
                "catalog_rename", by: actor, address: context.address, target: "\(item)",
                detail:
                    "change \(change.changeId): \(change.nameBefore ?? "") / \(change.nameEnBefore ?? "") → \(change.item.name) / \(change.item.nameEn ?? ""): \(change.reason)"
            )
            return Response.redirect(to: "/shop/catalog?done=rename")
        }
        group.post("shop/catalog/:kind/:index/retire") { request, context -> Response in
            var request = request
            let session = try context.requireSession()
            let item = try Self.item(context)
            let form = try await FormBody.read(&request)
            let reason = form["reason"] ?? ""
            guard form["confirmed"] == "yes" else {
                return Self.confirmPage(
                    context: context, action: Self.path(of: item) + "/retire",
                    question: context.language.pick(
                        "Retire \(item)? It is no longer sold from now on; whoever has it keeps it. Retiring is final. Retire the product in App Store Connect too.",
                        "\(item)의 판매를 종료할까요? 지금부터 판매되지 않으며, 이미 가진 사용자는 계속 보유합니다. 되돌릴 수 없습니다. App Store Connect에서도 판매를 종료하세요."
                    ),
                    reason: reason, fields: [], back: Self.path(of: item), danger: true)
            }
            let actor = session.operatorAccount.name
            let change: CatalogChange
            do {
                change = try await catalog.retire(item, SupportRequest(actor: actor, reason: reason))
            } catch let error as LedgerError {
                return Self.refused(error.message, context: context)
            }
            try await audit.record(
                "catalog_retire", by: actor, address: context.address, target: "\(item)",
                detail: "change \(change.changeId): \(change.reason)")
            return Response.redirect(to: "/shop/catalog?done=retire")
        }
    }

    static func path(of item: ItemID) -> String { "/shop/catalog/\(item.kind.rawValue)/\(item.index)" }

    /// The item the path names: `{kind}/{index}`.
    static func item(_ context: ConsoleContext) throws -> ItemID {
        guard let kind = ItemKind(rawValue: try context.parameters.require("kind")),
            let index = Int(try context.parameters.require("index")), (0...CatalogRules.maximumIndex).contains(index)
        else { throw HTTPError(.notFound) }
        return ItemID(kind: kind, index: index)
    }

    private func catalogPage(context: ConsoleContext, done: String?) async throws -> Response {
        let language = context.language
        let items = try await catalog.allItems()
        let rows: [HTML] = items.map { item in
            let state: String =
                if let retired = item.retiredAt {
                    language.pick("retired \(Pages.instant(retired))", "판매 종료 \(Pages.instant(retired))")
                } else if item.isFree {
                    language.pick("free", "무료")
                } else {
                    language.pick("on sale", "판매 중")
                }
            return """
                <tr><th scope="row"><a href="\(Self.path(of: item.id))">\(item.kind.rawValue) \(item.index)</a></th>
                <td>\(item.productId ?? "—")</td><td lang="ko">\(item.name)</td><td lang="en">\(item.nameEn ?? "")</td>
                <td class="num">\(item.isFree ? "—" : Pages.money(milli: item.price.amountMilli, currency: item.price.currency))</td>
                <td>\(state)</td></tr>
                """
        }
        let next = ItemKind.allCases.map { kind in
            let used = Set(items.filter { $0.kind == kind }.map(\.index))
            return "\(kind.rawValue) \((1...CatalogRules.maximumIndex).first { !used.contains($0) } ?? 0)"
        }.joined(separator: ", ")
        let kinds: [HTML] = ItemKind.allCases.map { "<option value=\"\($0.rawValue)\">\($0.rawValue)</option>" }
        let notice: String? =
            switch done {
            case "add": language.pick("Added.", "추가했습니다.")
            case "rename": language.pick("Renamed.", "이름을 바꿨습니다.")
            case "retire": language.pick("Retired.", "판매를 종료했습니다.")
            default: nil
            }
        return Pages.page(
            title: language.pick("Catalog", "카탈로그"), context: context, path: "/shop",
            """
            \(Self.notice(notice))
            <p><a href="/shop">\(language.pick("← Shop", "← 상점"))</a></p>
            <table id="catalog"><thead><tr><th scope="col">\(language.pick("Item", "아이템"))</th>
            <th scope="col">\(language.pick("Product id", "상품 ID"))</th><th scope="col">\(language.pick("Korean name", "한국어 이름"))</th>
            <th scope="col">\(language.pick("English name", "영어 이름"))</th><th scope="col">\(language.pick("Price", "가격"))</th>
            <th scope="col">\(language.pick("State", "상태"))</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            <p>\(language.pick("Open an item to rename or retire it.", "이름을 바꾸거나 판매를 종료하려면 아이템을 여세요."))</p>
            <h2>\(language.pick("Add an item", "아이템 추가"))</h2>
            <p>\(language.pick("Its kind, index, product id and price never change afterwards; create the product in App Store Connect with the same product id. Next free indexes: \(next).", "종류, 번호, 상품 ID, 가격은 나중에 바꿀 수 없습니다. App Store Connect에도 같은 상품 ID로 상품을 만드세요. 비어 있는 다음 번호: \(next)."))</p>
            <form method="post" action="/shop/catalog" class="stack">\(Pages.csrfField(context))
            <label for="add-kind">\(language.pick("Kind", "종류"))</label>
            <select id="add-kind" name="kind" required>\(kinds)</select>
            <label for="add-index">\(language.pick("Index", "번호"))</label>
            <input id="add-index" name="index" type="number" min="1" max="\(CatalogRules.maximumIndex)" required>
            <label for="add-product">\(language.pick("Product id", "상품 ID"))</label>
            <input id="add-product" name="product_id" required>
            <label for="add-name">\(language.pick("Korean name", "한국어 이름"))</label>
            <input id="add-name" name="name" lang="ko" required>
            <label for="add-name-en">\(language.pick("English name", "영어 이름"))</label>
            <input id="add-name-en" name="name_en" lang="en" required>
            <label for="add-description">\(language.pick("Description (optional)", "설명 (선택)"))</label>
            <input id="add-description" name="description">
            <label for="add-price">\(language.pick("Price, in major units (2500 is ₩2,500; 0.99 is $0.99)", "가격, 기본 단위 (2500은 ₩2,500, 0.99는 $0.99)"))</label>
            <input id="add-price" name="price" inputmode="decimal" required>
            <label for="add-currency">\(language.pick("Currency (ISO 4217)", "통화 (ISO 4217)"))</label>
            <input id="add-currency" name="currency" value="KRW" size="3" maxlength="3" required>
            <label for="add-reason">\(language.pick("Reason (recorded with your name)", "사유 (이름과 함께 기록됩니다)"))</label>
            <input id="add-reason" name="reason" required>
            <button type="submit">\(language.pick("Add", "추가"))</button>
            </form>
            """)
    }

    private func itemPage(_ item: CatalogItem, context: ConsoleContext) -> Response {
        let language = context.language
        let path = Self.path(of: item.id)
        let retire: HTML =
            item.isFree || item.isRetired
            ? "<p>\(item.isFree ? language.pick("A free item is never retired.", "무료 아이템은 판매를 종료할 수 없습니다.") : language.pick("Retired.", "판매 종료됨."))</p>"
            : """
            <form method="post" action="\(path)/retire" class="row">\(Pages.csrfField(context))
            <span class="field"><label for="retire-reason">\(language.pick("Reason", "사유"))</label>
            <input id="retire-reason" name="reason" required size="30"></span>
            <button type="submit" class="danger">\(language.pick("Retire…", "판매 종료…"))</button>
            </form>
            """
        return Pages.page(
            title: "\(item.kind.rawValue) \(item.index) · \(language == .ko ? item.name : (item.nameEn ?? item.name))",
            context: context, path: "/shop",
            """
            <p><a href="/shop/catalog">\(language.pick("← Catalog", "← 카탈로그"))</a></p>
            <dl class="facts">
            <dt>\(language.pick("Product id", "상품 ID"))</dt><dd>\(item.productId ?? "—")</dd>
            <dt>\(language.pick("Google Play product id", "Google Play 상품 ID"))</dt><dd>\(item.googleProductId ?? "—")</dd>
            <dt>\(language.pick("Korean name", "한국어 이름"))</dt><dd lang="ko">\(item.name)</dd>
            <dt>\(language.pick("English name", "영어 이름"))</dt><dd lang="en">\(item.nameEn ?? "")</dd>
            <dt>\(language.pick("Price", "가격"))</dt><dd>\(item.isFree ? "—" : Pages.money(milli: item.price.amountMilli, currency: item.price.currency))</dd>
            <dt>\(language.pick("Retired", "판매 종료"))</dt><dd>\(item.retiredAt.map(Pages.instant) ?? "—")</dd>
            </dl>
            <h2>\(language.pick("Rename", "이름 바꾸기"))</h2>
            <form method="post" action="\(path)/rename" class="stack">\(Pages.csrfField(context))
            <label for="rename-name">\(language.pick("New Korean name (empty: unchanged)", "새 한국어 이름 (비우면 그대로)"))</label>
            <input id="rename-name" name="name" lang="ko" value="\(item.name)">
            <label for="rename-name-en">\(language.pick("New English name (empty: unchanged)", "새 영어 이름 (비우면 그대로)"))</label>
            <input id="rename-name-en" name="name_en" lang="en" value="\(item.nameEn ?? "")">
            <label for="rename-reason">\(language.pick("Reason (recorded with your name)", "사유 (이름과 함께 기록됩니다)"))</label>
            <input id="rename-reason" name="reason" required>
            <button type="submit">\(language.pick("Rename", "이름 바꾸기"))</button>
            </form>
            <h2>\(language.pick("Retire", "판매 종료"))</h2>
            \(retire)
            """)
    }
}
