import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Receipts
import Testing

@testable import ShopServer

/// `/metrics` is for the operator: its label values stay few whatever clients send, and it can be
/// kept from everyone else.
@Suite("Metrics: bounded labels, and a token for /metrics")
struct MetricsExposureTests {
    @Test("notification types the shop does not know are counted as one label, not one label each")
    func unknownNotificationTypesShareALabel() async throws {
        try await withShopServer { client, _ in
            for index in 0..<5 {
                let type = VerifiedNotification.NotificationType(rawValue: "MADE_UP_TYPE_\(index)_\(UUID().uuidString)")
                let notification = ServerTest.stubNotification(
                    type, transaction: "stub-none-\(index)", product: product(.face(1)))
                _ = try await client.api(
                    .post, "/api/v1/notifications/app-store", json: ["signedPayload": notification])
            }
            let text = try await client.send(.get, "/metrics").body
            #expect(!text.contains("MADE_UP_TYPE"), "client-chosen types became labels:\n\(text)")
            #expect(text.contains(#"shop_notifications_total{type="other""#), "\(text)")
        }
    }

    @Test("with a metrics token, /metrics answers 401 without it and 200 with it")
    func metricsToken() async throws {
        let token = "metrics-token-0123456789abcdef"
        try await withShopServer(configure: { $0.metricsToken = token }) { client, _ in
            #expect(try await client.send(.get, "/metrics").status == .unauthorized)
            let wrong: HTTPFields = [.authorization: "Bearer not-the-token-0123456789"]
            #expect(try await client.send(.get, "/metrics", headers: wrong).status == .unauthorized)
            let right: HTTPFields = [.authorization: "Bearer \(token)"]
            let answer = try await client.send(.get, "/metrics", headers: right)
            #expect(answer.status == .ok && answer.body.contains("http_requests_total"))
        }
    }
}
