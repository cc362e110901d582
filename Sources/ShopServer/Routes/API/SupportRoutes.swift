import APIViews
import Foundation
import Hummingbird
import Ledger

/// Support actions under `/api/v1/admin`, for the admin token only (registered on the admin group, whose ``AdminAuthentication`` checks it); the token's label is recorded
/// as the actor of each (migration 0010):
///
/// - `POST /api/v1/admin/grants`: grant an item to a user as compensation (a reason is required);
/// - `POST /api/v1/admin/grants/{actionId}/revoke`: take such a grant back (a reason is required);
/// - `GET /api/v1/admin/purchases/{transactionId}`: the purchases with that transaction id or
///   original transaction id, each with its whole history;
/// - `GET /api/v1/admin/users/{uid}/history`: a user's purchases with their histories, and every
///   support action about the user.
struct SupportRoutes {
    let ledger: LedgerStore
    let body: RequestBody

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.post("admin/grants") { request, context -> EditedResponse<ViewResponse<SupportActionView>> in
            let actor = try context.requireAdminActor()
            let input = try await body.json(SupportBodies.GrantRequest.self, of: request)
            guard let kind = ItemKind(rawValue: input.kind) else {
                throw LedgerError(.invalidInput, "kind must be face or background, got \(input.kind)")
            }
            let action = try await ledger.grantCompensation(
                ItemID(kind: kind, index: input.index), to: input.uid,
                SupportRequest(actor: actor, reason: input.reason, transactionId: input.transactionId))
            return EditedResponse(status: .created, response: ViewResponse(SupportActionView(action)))
        }
        group.post("admin/grants/:actionId/revoke") { request, context in
            let actor = try context.requireAdminActor()
            let text = try context.parameters.require("actionId")
            guard let grantId = Int64(text), grantId > 0 else {
                throw LedgerError(.invalidInput, "the grant id must be a positive integer, got \(text)")
            }
            let input = try await body.json(SupportBodies.RevokeRequest.self, of: request)
            return ViewResponse(
                SupportActionView(
                    try await ledger.revokeCompensation(grantId, SupportRequest(actor: actor, reason: input.reason))))
        }
        group.get("admin/purchases/:transactionId") { _, context in
            let id = try context.parameters.require("transactionId")
            let records = try await ledger.lookUpPurchases(id)
            guard !records.isEmpty else {
                throw LedgerError(.noSuchPurchase, "no purchase has transaction id or original transaction id \(id)")
            }
            return ViewResponse(PurchaseLookupView(id: id, records: records))
        }
        group.get("admin/users/:uid/history") { _, context in
            let uid = try context.parameters.require("uid")
            let records = try await ledger.purchaseRecords(of: uid)
            let actions = try await ledger.supportActions(of: uid)
            return ViewResponse(UserHistoryView(uid: uid, records: records, supportActions: actions))
        }
    }
}
