import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Postgres
import TestSupport
import Testing

/// Apple's App Store Server API hung: it accepts connections and never answers (the kernel completes
/// the handshake; nobody reads). The real `shopledger serve`, configured with the API pointed there,
/// must still answer every purchase in time, recording what it knows.
@Suite("Fault: Apple's API hangs")
struct AppleOutageTests {
    static let products = ["com.memolease.sesac1.sprout2", "com.memolease.sesac1.sprout3"]

    /// A listening socket that never accepts: every request sent to it waits forever.
    final class SilentListener: Sendable {
        let descriptor: Int32
        let port: Int

        init() throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    bind(descriptor, address, length) == 0 && listen(descriptor, 128) == 0
                        && getsockname(descriptor, address, &length) == 0
                }
            }
            guard descriptor >= 0, bound else { throw FaultTestError("cannot listen on 127.0.0.1: errno \(errno)") }
            self.descriptor = descriptor
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        var url: String { "http://127.0.0.1:\(port)" }
        func close() { _ = Glibc.close(descriptor) }
    }

    @Test(
        "Apple never answers: classic purchases 200 unpriced within the request timeout on both surfaces; restore 503 app_store_unavailable",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(3)))
    func hungApple() async throws {
        try await FaultScenario.run("hung-apple") { scenario in
            let apple = try SilentListener()
            defer { apple.close() }
            let keyFile = scenario.folder + "/AuthKey.p8"
            try P256.Signing.PrivateKey().pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
            let receiptRoot = scenario.folder + "/receipt-root.der"
            try Data(TestPKI.der(TestReceiptPKI.shared.root)).write(to: URL(fileURLWithPath: receiptRoot))
            let server = try await scenario.startServer(options: [
                "--request-timeout", "4", "--receipt-root-cert", receiptRoot, "--app-store-key-file", keyFile,
                "--app-store-key-id", "HUNGKEY123", "--app-store-issuer-id", "57246542-96fe-1a63-e053-0824d011072a",
                "--app-store-production-url", apple.url, "--app-store-sandbox-url", apple.url,
            ])
            let http = scenario.http
            let uid = "hung-apple-user"
            _ = try await http.send(
                .POST, server.baseURL + "/api/v1/me", headers: [("Authorization", "Bearer dev:\(uid)")])
            let receipt = TestReceiptPKI.shared.receipt(
                TestReceipt(
                    bundleId: FaultFixtures.bundleId,
                    purchases: [
                        .init(productId: Self.products[0], transactionId: "hung-1"),
                        .init(productId: Self.products[1], transactionId: "hung-2"),
                    ]))

            // The shipped app's form, then the JSON surface.
            var started = ContinuousClock.now
            let sesac = await http.outcome(
                .POST, server.baseURL + "/v1/user/shop/ios",
                headers: [("idtoken", "dev:\(uid)"), ("Content-Type", "application/x-www-form-urlencoded")],
                body: FaultFixtures.form([("receipt", receipt), ("product", Self.products[0])]), timeout: .seconds(10))
            let sesacTook = ContinuousClock.now - started
            started = ContinuousClock.now
            let json = await http.outcome(
                .POST, server.baseURL + "/api/v1/purchases",
                headers: [("Authorization", "Bearer dev:\(uid)"), ("Content-Type", "application/json")],
                body: FaultFixtures.json(["receipt": receipt, "productId": Self.products[1]]), timeout: .seconds(10))
            let jsonTook = ContinuousClock.now - started
            started = ContinuousClock.now
            let restore = await http.outcome(
                .POST, server.baseURL + "/api/v1/purchases/restore",
                headers: [("Authorization", "Bearer dev:\(uid)"), ("Content-Type", "application/json")],
                body: FaultFixtures.json(["receipt": receipt]), timeout: .seconds(10))
            let restoreTook = ContinuousClock.now - started

            #expect(sesac.0.status == 200 && sesacTook < .seconds(4), "\(sesac.0) in \(ms(sesacTook))")
            #expect(json.0.status == 200 && jsonTook < .seconds(4), "\(json.0) in \(ms(jsonTook))")
            #expect((json.1?.json["purchase"] as? [String: Any])?["price"] is NSNull, "\(json.1?.body ?? "")")
            #expect(
                restore.0.status == 503 && restore.0.code == "app_store_unavailable" && restoreTook < .seconds(4),
                "\(restore.0) in \(ms(restoreTook))")
            let unpriced = try await scenario.cluster.withClient { client in
                try await client.query(
                    "SELECT transaction_id FROM purchases WHERE price_milli IS NULL ORDER BY 1"
                ).map { try $0.decode(String.self, at: 0) }
            }
            #expect(unpriced == ["hung-1", "hung-2"], "recorded, unpriced: \(unpriced)")
            #expect(server.child.exit == nil, "the server is alive:\n\(server.child.logTail())")
            scenario.report(
                "Apple silent: SeSAC purchase \(sesac.0) in \(ms(sesacTook)), JSON \(json.0) in \(ms(jsonTook)), "
                    + "restore \(restore.0) in \(ms(restoreTook)) (request timeout 4 s); recorded unpriced: \(unpriced)"
            )
        }
    }
}
