import Hummingbird
import Ledger

/// `POST /api/v1/me` (register), `GET /api/v1/me` (what I own and show) and `PUT /api/v1/me/equipped`.
/// Auth: `Authorization: Bearer <Firebase ID token>`, checked by the group's ``UserAuthentication``.
struct MeRoutes {
    let ledger: LedgerStore
    let body: RequestBody

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.post("me") { request, context in try await signUp(request, uid: context.requireUID()) }
        group.get("me") { _, context in try await me(uid: context.requireUID()) }
        group.put("me/equipped") { request, context in try await equip(request, uid: context.requireUID()) }
    }

    /// Registers the caller (idempotent). An optional JSON object body is kept as the profile.
    /// 201 registered now, 200 already registered; both answer the `me` document.
    func signUp(_ request: Request, uid: String) async throws -> EditedResponse<APIBodies.Me> {
        var profile = try UserProfile(json: "{}")
        if request.headers[.contentLength].map({ $0 != "0" }) ?? false || request.headers[.transferEncoding] != nil {
            do {
                let text = try await body.jsonText(of: request)
                profile = try UserProfile(json: text)
                try ProfileRules.check(text)
            } catch let error as LedgerError {
                throw InputError("invalid_json", error.message)
            }
        }
        let outcome = try await ledger.register(uid: uid, profile: profile)
        return EditedResponse(
            status: outcome == .registered ? .created : .ok, response: APIBodies.Me(try await ledger.inventory(of: uid))
        )
    }

    func me(uid: String) async throws -> APIBodies.Me {
        return APIBodies.Me(try await ledger.inventory(of: uid))
    }

    /// 200 equipped; 409 `item_not_owned`; 422 `no_such_item`.
    func equip(_ request: Request, uid: String) async throws -> APIBodies.Equipped {
        let wanted = try await body.json(APIBodies.Equipped.self, of: request)
        switch try await ledger.equip(face: wanted.face, background: wanted.background, for: uid) {
        case .equipped(let items): return APIBodies.Equipped(face: items.face, background: items.background)
        case .notOwned(let items):
            throw APIError(
                .conflict, code: "item_not_owned",
                message: "not owned: " + items.map(\.description).joined(separator: " and "))
        }
    }
}
