import APIViews
import Foundation
import Hummingbird
import Ledger

/// Catalog administration under `/api/v1/admin`, for the admin token only (registered on the admin
/// group, whose ``AdminAuthentication`` checks it); the token's label is recorded as the actor of each
/// change, with the required reason (migration 0017, `CatalogStore+Admin`):
///
/// - `GET /api/v1/admin/catalog`: every item, retired ones with `retiredAt`;
/// - `POST /api/v1/admin/catalog`: add a paid item (`{kind, index, productId, name, nameEn, description?,
///   price: {amountMilli, currency}, reason}`);
/// - `POST /api/v1/admin/catalog/{kind}/{index}/rename`: `{name?, nameEn?, reason}`;
/// - `POST /api/v1/admin/catalog/{kind}/{index}/retire`: `{reason}`; no longer sold, still owned.
/// - `POST /api/v1/admin/catalog/{kind}/{index}/google-product`: `{googleProductId}`; sold on Google Play
///   as that product too (set once, docs/google-play.md). No catalog change is recorded for it yet.
///
/// POST, not PATCH, for rename and retire: each is an action recorded with who and why, as
/// `POST /api/v1/admin/grants/{actionId}/revoke` is, not an edit of a resource's fields.
struct AdminCatalogRoutes {
    let catalog: CatalogStore
    let body: RequestBody

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.get("admin/catalog") { _, _ in
            ViewResponse(CatalogView(try await catalog.allItems()))
        }
        group.post("admin/catalog") { request, context -> EditedResponse<ViewResponse<CatalogChangeView>> in
            let actor = try context.requireAdminActor()
            let input = try await body.json(AdminCatalogBodies.AddRequest.self, of: request)
            let new = NewCatalogItem(
                item: ItemID(kind: try Self.kind(input.kind), index: input.index), productId: input.productId,
                name: input.name, nameEn: input.nameEn, description: input.description ?? "", price: input.price)
            let change = try await catalog.add(new, SupportRequest(actor: actor, reason: input.reason))
            return EditedResponse(status: .created, response: ViewResponse(CatalogChangeView(change)))
        }
        group.post("admin/catalog/:kind/:index/rename") { request, context in
            let actor = try context.requireAdminActor()
            let item = try Self.item(context)
            let input = try await body.json(AdminCatalogBodies.RenameRequest.self, of: request)
            return ViewResponse(
                CatalogChangeView(
                    try await catalog.rename(
                        item, name: input.name, nameEn: input.nameEn,
                        SupportRequest(actor: actor, reason: input.reason))))
        }
        group.post("admin/catalog/:kind/:index/retire") { request, context in
            let actor = try context.requireAdminActor()
            let item = try Self.item(context)
            let input = try await body.json(AdminCatalogBodies.RetireRequest.self, of: request)
            return ViewResponse(
                CatalogChangeView(try await catalog.retire(item, SupportRequest(actor: actor, reason: input.reason))))
        }
    }

    /// Registered with the others (``register(on:)``) by its own function: Google Play's mapping.
    func registerGooglePlay(on group: RouterGroup<ShopRequestContext>) {
        group.post("admin/catalog/:kind/:index/google-product") { request, context in
            let actor = try context.requireAdminActor()
            let item = try Self.item(context)
            let input = try await body.json(AdminCatalogBodies.GoogleProductRequest.self, of: request)
            return ViewResponse(
                CatalogChangeView(
                    try await catalog.setGoogleProductId(
                        item, input.googleProductId, SupportRequest(actor: actor, reason: input.reason))))
        }
    }

    static func kind(_ text: String) throws -> ItemKind {
        guard let kind = ItemKind(rawValue: text) else {
            throw LedgerError(.invalidInput, "kind must be face or background, got \(text.prefix(40))")
        }
        return kind
    }

    /// The item the path names: `{kind}/{index}`.
    static func item(_ context: ShopRequestContext) throws -> ItemID {
        let kind = try kind(try context.parameters.require("kind"))
        let text = try context.parameters.require("index")
        guard let index = Int(text), (0...CatalogRules.maximumIndex).contains(index) else {
            throw LedgerError(
                .invalidInput, "the index must be an integer 0–\(CatalogRules.maximumIndex), got \(text.prefix(40))")
        }
        return ItemID(kind: kind, index: index)
    }
}

/// The request bodies of the catalog administration endpoints (`AdminCatalogRoutes`); their answers are
/// APIViews' `CatalogView` and `CatalogChangeView`.
package enum AdminCatalogBodies {
    /// `POST /api/v1/admin/catalog`. The price is in milliunits with its currency, as
    /// `GET /api/v1/catalog` shows prices (`{"amountMilli": 2500000, "currency": "KRW"}` is ₩2,500).
    package struct AddRequest: Decodable, Sendable {
        let kind: String
        let index: Int
        let productId: String
        let name: String
        let nameEn: String
        let description: String?
        let price: Money
        let reason: String
    }

    /// `POST /api/v1/admin/catalog/{kind}/{index}/rename`: a name left out stays.
    package struct RenameRequest: Decodable, Sendable {
        let name: String?
        let nameEn: String?
        let reason: String
    }

    /// `POST /api/v1/admin/catalog/{kind}/{index}/retire`.
    package struct RetireRequest: Decodable, Sendable {
        let reason: String
    }

    /// `POST /api/v1/admin/catalog/{kind}/{index}/google-product`.
    package struct GoogleProductRequest: Decodable, Sendable {
        let googleProductId: String
        let reason: String
    }
}
