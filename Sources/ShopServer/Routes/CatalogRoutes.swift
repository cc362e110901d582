import APIViews
import Hummingbird
import Ledger

/// `GET /api/v1/catalog`: every item with its kind, index, product id, name, description and price,
/// and (since migration 0017) its English name and whether it is retired. Retired items stay listed:
/// whoever bought one still owns and shows it, so a client needs its name; a client that sells from
/// this list skips the items with `retired: true` (the server refuses to sell them anyway).
/// Read from the database on each request: an item added or retired shows at once.
struct CatalogRoutes {
    let catalog: CatalogStore

    /// `{"items": [...]}`, the keys of `CatalogItemView`, null when empty; the admin's catalog is the
    /// same view (answered in the views' encoding).
    struct Body: ResponseEncodable {
        let items: [CatalogItemView]
    }

    func register(on group: RouterGroup<some RequestContext>) {
        group.get("catalog") { _, _ in
            Body(items: CatalogView(try await catalog.allItems()).items)
        }
    }
}
