import NIOCore
import ShopServer

/// JSON request bodies: every body the JSON surface decodes (`RequestBody.decode`), the profile rules
/// (`ProfileRules.check`) and the `{"signedTransaction":"…"}` fast path. Invariant: a body the fast path
/// reads decodes in full to the same request.
struct JSONBodyFuzzer: Sendable {
    func run(_ bytes: [UInt8]) -> FuzzOutcome {
        let buffer = ByteBuffer(bytes: bytes)
        var accepted = false
        func decodes<T: Decodable>(_ type: T.Type) -> T? {
            guard let value = try? RequestBody.decode(type, from: buffer) else { return nil }
            accepted = true
            return value
        }

        let purchase = decodes(APIBodies.PurchaseRequest.self)
        if let fast = APIBodies.PurchaseRequest(signedTransactionOnly: buffer) {
            invariant(purchase != nil, "the fast path read a body JSONDecoder refuses")
            invariant(
                purchase?.signedTransaction == fast.signedTransaction && purchase?.receipt == nil
                    && purchase?.productId == nil && fast.receipt == nil && fast.productId == nil,
                "the fast path read \(String(describing: fast.signedTransaction)), JSONDecoder "
                    + "\(String(describing: purchase?.signedTransaction))")
        }
        _ = decodes(APIBodies.Equipped.self)
        _ = decodes(APIBodies.NotificationRequest.self)
        _ = decodes(APIBodies.RestoreRequest.self)
        _ = decodes(SupportBodies.GrantRequest.self)
        _ = decodes(SupportBodies.RevokeRequest.self)
        if let text = String(validating: bytes, as: UTF8.self) {
            do {
                try ProfileRules.check(text)
                accepted = true
            } catch {
                invariant(error.code == "invalid_profile", "the profile was refused with \(error.code)")
            }
        }
        return accepted ? .accepted : .refused("invalid_json")
    }
}
