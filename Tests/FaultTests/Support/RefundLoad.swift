import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// One App Store notification (a stub REFUND) sent during a fault, and what came back.
struct NotificationAttempt: Sendable {
    let uuid: String
    let transactionId: String
    let body: [UInt8]
    let outcome: FaultHTTP.Outcome

    static let path = "/api/v1/notifications/app-store"

    static func refund(of purchase: PurchaseRequest) -> (uuid: String, body: [UInt8]) {
        let uuid = UUID().uuidString.lowercased()
        let text = FaultFixtures.stubRefund(transaction: purchase.transactionId, product: purchase.product, uuid: uuid)
        return (uuid, FaultFixtures.json(["signedPayload": text]))
    }

    static func send(_ body: [UInt8], _ http: FaultHTTP, baseURL: String) async -> FaultHTTP.Outcome {
        await http.outcome(
            .POST, baseURL + path, headers: [("Content-Type", "application/json")], body: body, timeout: .seconds(30)
        ).0
    }
}

/// A client that refunds purchases the load got acknowledged (stub ones), one after the other, while
/// the load runs: the App Store telling us about refunds in the middle of the fault.
struct RefundLoad: Sendable {
    let baseURL: String

    func run(_ http: FaultHTTP, purchases: LoadRecord, until stop: StopSignal) async -> [NotificationAttempt] {
        var sent: [NotificationAttempt] = []
        var refunded = Set<String>()
        while !stop.isSet, !Task.isCancelled {
            let candidates = purchases.all.filter {
                $0.acknowledged && $0.request.way != .jsonSigned && !refunded.contains($0.request.transactionId)
            }
            guard let purchase = candidates.last?.request else {
                try? await Task.sleep(for: .milliseconds(20))
                continue
            }
            refunded.insert(purchase.transactionId)
            let (uuid, body) = NotificationAttempt.refund(of: purchase)
            let outcome = await NotificationAttempt.send(body, http, baseURL: baseURL)
            sent.append(
                NotificationAttempt(uuid: uuid, transactionId: purchase.transactionId, body: body, outcome: outcome))
            try? await Task.sleep(for: .milliseconds(15))
        }
        return sent
    }
}
