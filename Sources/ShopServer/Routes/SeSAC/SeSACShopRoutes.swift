import HTTPTypes
import Hummingbird
import Ledger
import Receipts
import Shop

/// The SeSAC-compatible shop endpoints: equip (`POST /v1/user/shop/item`) and report an App Store purchase
/// (`POST /v1/user/shop/ios`). Form bodies, `idtoken` auth (the group's ``UserAuthentication``); the
/// status is the contract.
struct SeSACShopRoutes {
    let ledger: LedgerStore
    let desk: PurchaseDesk
    let body: RequestBody

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.post("v1/user/shop/item") { request, context in try await equip(request, uid: context.requireUID()) }
        group.post("v1/user/shop/ios") { request, context in try await purchase(request, uid: context.requireUID()) }
    }

    /// `sesac=<int>&background=<int>`: 200 equipped; 201 an item is not owned; 501 not an integer or no
    /// such item; 406 not signed up.
    func equip(_ request: Request, uid: String) async throws -> SeSACReply {
        let form = try await body.form(of: request)
        let face = try form.requiredInteger("sesac")
        let background = try form.requiredInteger("background")
        switch try await ledger.equip(face: face, background: background, for: uid) {
        case .equipped: return SeSACReply(.ok, "saved")
        case .notOwned(let items):
            return SeSACReply(.created, "not owned: " + items.map(\.description).joined(separator: ", "))
        }
    }

    /// `receipt=<JWS, stub or app receipt>&product=<product id>`: 200 verified and granted (also when posted
    /// again by the same user; a purchase Apple refunded is recorded as refunded and grants nothing);
    /// 201 receipt validation failed (refused proof, product not in the receipt, unknown product, a
    /// transaction of another user); 501 a missing field; 406 not signed up. For a classic receipt the
    /// posted product selects the entry recorded.
    func purchase(_ request: Request, uid: String) async throws -> SeSACReply {
        let form = try await body.form(of: request)
        let receipt = try form.required("receipt")
        let product = try form.required("product")
        let outcome: PurchaseOutcome
        do {
            outcome = try await desk.purchase(.receipt(receipt, productId: product), for: uid)
        } catch let refusal as ReceiptRefusal {
            return SeSACReply(.created, "receipt validation failed: \(refusal.reason.rawValue)")
        } catch let error as LedgerError where error.code != .userNotRegistered {
            return SeSACReply(.created, "receipt validation failed: \(error.code.rawValue)")
        }
        switch outcome {
        case .recorded(let purchase) where !purchase.isLive, .duplicate(let purchase) where !purchase.isLive:
            // Verified and recorded as Apple reports it, refunded: 200 as for any recorded proof (the
            // user document shows the item is not owned); the message says so.
            return SeSACReply(.ok, "purchase recorded as \(purchase.state.rawValue): nothing granted")
        case .recorded: return SeSACReply(.ok, "purchase recorded")
        case .duplicate: return SeSACReply(.ok, "purchase already recorded")
        case .conflict(let reason): return SeSACReply(.created, "receipt validation failed: \(reason.rawValue)")
        }
    }
}
