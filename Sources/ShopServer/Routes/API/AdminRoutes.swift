import APIViews
import Foundation
import Hummingbird
import Ledger
import Postgres

/// Support and operations endpoints under `/api/v1/admin`, for the configured admin bearer token only
/// (registered on the admin group, whose ``AdminAuthentication`` checks it):
///
/// - `GET /api/v1/admin/users/{uid}`: a user's items, equipped pair and every purchase with its state;
/// - `GET /api/v1/admin/reconciliation`: `checks` run now in one snapshot (`serve` passes the list
///   `shopledger reconcile` runs, so the same report as `shopledger reconcile --json`); 200 when all pass,
///   409 when any fails.
struct AdminRoutes {
    let ledger: LedgerStore
    let client: PostgresClient
    let checks: [any ReconciliationCheck]

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.get("admin/users/:uid") { _, context in
            let uid = try context.parameters.require("uid")
            guard let summary = try await ledger.accountSummary(of: uid) else {
                throw LedgerError.userNotRegistered(uid)
            }
            let purchases = try await ledger.purchaseHistory(of: uid)
            return APIBodies.AdminUser(
                uid: uid, registeredAt: UserDocument.timestamp(summary.user.registeredAt),
                equipped: summary.inventory.equipped,
                owned: .init(faces: summary.inventory.faces, backgrounds: summary.inventory.backgrounds),
                purchases: purchases.map(APIBodies.PurchaseBody.init))
        }
        group.get("admin/reconciliation") { _, _ in
            let report = try await Reconciler(client: client, checks: checks).run()
            return Response(
                status: report.passed ? .ok : .conflict, headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: try report.json())))
        }
    }
}
