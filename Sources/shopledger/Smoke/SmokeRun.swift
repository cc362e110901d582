import Crypto
import Foundation
import Receipts

/// One check of `smoke`: passed, failed (the detail says what came back), or skipped (what it needs).
struct SmokeCheck: Encodable, Sendable {
    enum Outcome: String, Encodable, Sendable { case passed, failed, skipped }

    let name: String
    let outcome: Outcome
    let detail: String
    let durationMs: Int

    enum CodingKeys: String, CodingKey {
        case name, outcome, detail, durationMs = "duration_ms"
    }

    /// `ok    ready                /readyz 200 {"status":"ready"} (4 ms)`
    var line: String {
        let mark = ["passed": "ok", "failed": "FAIL", "skipped": "skip"][outcome.rawValue] ?? outcome.rawValue
        return mark.padding(toLength: 6, withPad: " ", startingAt: 0)
            + name.padding(toLength: 21, withPad: " ", startingAt: 0) + detail
            + (outcome == .skipped ? "" : " (\(durationMs) ms)")
    }
}

/// The checks, in order; a check whose prerequisite failed is skipped, saying which.
struct SmokeRun: Sendable {
    let client: SmokeHTTP
    let bundleId: String
    let token: String?
    let signedTransaction: String?

    /// A failed expectation inside a check.
    struct Failure: Error { let detail: String }

    func run() async -> [SmokeCheck] {
        var checks: [SmokeCheck] = []
        func check(_ name: String, _ body: () async throws -> String) async -> Bool {
            let start = ContinuousClock.now
            let outcome: SmokeCheck.Outcome
            let detail: String
            do {
                detail = try await body()
                outcome = .passed
            } catch let failure as Failure {
                (outcome, detail) = (.failed, failure.detail)
            } catch {
                (outcome, detail) = (.failed, "no answer: \(error)")
            }
            let elapsed = (ContinuousClock.now - start).components
            let ms = Int(elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000)
            checks.append(SmokeCheck(name: name, outcome: outcome, detail: detail, durationMs: ms))
            return outcome == .passed
        }
        func skip(_ name: String, _ why: String) {
            checks.append(SmokeCheck(name: name, outcome: .skipped, detail: why, durationMs: 0))
        }

        _ = await check("ready") {
            let answer = try await client.get("/readyz")
            try expect(answer.status == 200, "/readyz \(answer.summary)")
            return "/readyz \(answer.summary)"
        }
        var catalog: [[String: Any]] = []
        _ = await check("catalog") {
            let answer = try await client.get("/api/v1/catalog")
            try expect(answer.status == 200, "/api/v1/catalog \(answer.summary)")
            catalog = answer.object?["items"] as? [[String: Any]] ?? []
            let onSale = catalog.filter { $0["productId"] is String && $0["retired"] as? Bool == false }
            try expect(!onSale.isEmpty, "/api/v1/catalog lists no item on sale: \(answer.summary)")
            return "\(catalog.count) items, \(onSale.count) on sale"
        }
        let productId =
            catalog.lazy.compactMap { $0["productId"] as? String }.first ?? "com.memolease.sesac1.smoke"
        let forger = ForgedProof(bundleId: bundleId)

        _ = await check("forged_notification") {
            let answer = try await client.post(
                "/api/v1/notifications/app-store", json: ["signedPayload": forger.notification()])
            try expect(answer.status == 400, "a forged notification was not refused: \(answer.summary)")
            return "refused: 400 \(answer.errorCode ?? "")"
        }

        guard let token else {
            for name in ["register", "forged_purchase", "purchase", "owned", "duplicate"] {
                skip(name, "needs --token-file")
            }
            return checks
        }
        let registered = await check("register") {
            let answer = try await client.post("/api/v1/me", json: nil, token: token)
            try expect([200, 201].contains(answer.status), "POST /api/v1/me \(answer.summary)")
            let uid = answer.object?["uid"] as? String ?? "?"
            return "\(uid): \(answer.status == 201 ? "registered now" : "already registered")"
        }
        guard registered else {
            for name in ["forged_purchase", "purchase", "owned", "duplicate"] {
                skip(name, "the user is not registered")
            }
            return checks
        }
        _ = await check("forged_purchase") {
            let before = try await owned(token)
            let answer = try await client.post(
                "/api/v1/purchases", json: ["signedTransaction": forger.transaction(productId: productId)],
                token: token)
            try expect(answer.status == 422, "a forged transaction was not refused: \(answer.summary)")
            let after = try await owned(token)
            try expect(before == after, "the user's items changed after a refused proof: \(before) → \(after)")
            return "refused: 422 \(answer.errorCode ?? ""); owned items unchanged"
        }

        guard let signedTransaction else {
            for name in ["purchase", "owned", "duplicate"] { skip(name, "needs --signed-transaction-file") }
            return checks
        }
        var bought: (kind: String, index: Int, transactionId: String)?
        let recorded = await check("purchase") {
            let answer = try await client.post(
                "/api/v1/purchases", json: ["signedTransaction": signedTransaction], token: token)
            try expect(answer.status == 200, "POST /api/v1/purchases \(answer.summary)")
            let purchase = answer.object?["purchase"] as? [String: Any]
            let item = purchase?["item"] as? [String: Any]
            guard let kind = item?["kind"] as? String, let index = item?["index"] as? Int,
                let transactionId = purchase?["transactionId"] as? String
            else { throw Failure(detail: "the answer has no purchase: \(answer.summary)") }
            bought = (kind, index, transactionId)
            let environment = purchase?["environment"] as? String ?? "?"
            let again = answer.object?["duplicate"] as? Bool == true ? " (recorded by an earlier run)" : ""
            return "\(transactionId) recorded, \(kind) \(index), \(environment)\(again)"
        }
        guard recorded, let bought else {
            for name in ["owned", "duplicate"] { skip(name, "the purchase was not recorded") }
            return checks
        }
        _ = await check("owned") {
            let items = try await owned(token)
            try expect(
                items[bought.kind + "s"]?.contains(bought.index) == true,
                "\(bought.kind) \(bought.index) is not among the user's items: \(items)")
            return "\(bought.kind) \(bought.index) is the user's"
        }
        _ = await check("duplicate") {
            let answer = try await client.post(
                "/api/v1/purchases", json: ["signedTransaction": signedTransaction], token: token)
            let purchase = answer.object?["purchase"] as? [String: Any]
            try expect(
                answer.status == 200 && answer.object?["duplicate"] as? Bool == true
                    && purchase?["transactionId"] as? String == bought.transactionId,
                "posting it again was not answered as a duplicate of \(bought.transactionId): \(answer.summary)")
            return "posted again: the same purchase, duplicate, not counted twice"
        }
        return checks
    }

    /// `GET /api/v1/me`'s `owned`: `{"faces": [...], "backgrounds": [...]}`.
    private func owned(_ token: String) async throws -> [String: [Int]] {
        let answer = try await client.get("/api/v1/me", token: token)
        guard answer.status == 200, let owned = answer.object?["owned"] as? [String: [Int]] else {
            throw Failure(detail: "GET /api/v1/me \(answer.summary)")
        }
        return owned
    }

    private func expect(_ condition: Bool, _ detail: @autoclosure () -> String) throws {
        if !condition { throw Failure(detail: detail()) }
    }
}

/// Proofs a forger could make: shaped like the App Store's JWS, carrying Apple's own root certificate in
/// `x5c`, signed by a key made here. A server that checks the chain and the signature refuses both.
struct ForgedProof: Sendable {
    let bundleId: String
    private let key = P256.Signing.PrivateKey()

    func transaction(productId: String) -> String {
        let id = "smoke-forged-\(UUID().uuidString.prefix(8).lowercased())"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return sign([
            "transactionId": id, "originalTransactionId": id, "bundleId": bundleId, "productId": productId,
            "type": "Non-Consumable", "purchaseDate": now, "signedDate": now, "environment": "Sandbox",
            "inAppOwnershipType": "PURCHASED", "quantity": 1,
        ])
    }

    func notification() -> String {
        sign([
            "notificationType": "TEST", "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": Int64(Date().timeIntervalSince1970 * 1000),
            "data": ["bundleId": bundleId, "environment": "Sandbox"],
        ])
    }

    private func sign(_ payload: [String: Any]) -> String {
        let apple = Data(RootCertificate.appleRootCAG3.derBytes).base64EncodedString()
        let header = ["alg": "ES256", "x5c": [apple, apple, apple]] as [String: Any]
        let input = Self.base64URL(Self.json(header)) + "." + Self.base64URL(Self.json(payload))
        let signature = (try? key.signature(for: Data(input.utf8)).rawRepresentation) ?? Data()
        return input + "." + Self.base64URL(signature)
    }

    private static func json(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
