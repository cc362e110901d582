import Foundation
import Postgres
import TestSupport
import Testing

/// `shopledger smoke` against the real binary serving as in production: no `--dev-auth`, no
/// `--stub-receipts`; users sign in with Firebase ID tokens checked against Google-shaped certificates
/// (a file here), purchases are StoreKit 2 transactions under the test PKI's root (`--root-cert`, the one
/// thing that differs from Apple's production trust), bought in the sandbox.
@Suite("shopledger smoke against a production-configured server")
struct SmokeTests {
    static func smoke(_ arguments: [String]) async throws -> (status: Spawned.Termination, checks: [String: String]) {
        let (status, output) = try await Spawned.run(
            [try ServerProcess.binary(), "smoke", "--json"]
                + (arguments.contains("--timeout") ? [] : ["--timeout", "30"])
                + arguments, timeout: .seconds(120))
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
        let checks = try #require(object["checks"] as? [[String: Any]], "\(output)")
        // name → outcome, in the order run (names are unique).
        var outcomes: [String: String] = [:]
        for check in checks {
            outcomes[check["name"] as? String ?? "?"] = check["outcome"] as? String
        }
        #expect(object["passed"] as? Bool == (status == .exited(0)), "\(output)")
        return (status, outcomes)
    }

    static let everyCheck = [
        "ready", "catalog", "forged_notification", "register", "forged_purchase", "purchase", "owned", "duplicate",
    ]

    @Test(
        "every check passes with a user's token and a sandbox purchase, twice, and the ledger holds the purchase once",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(4)))
    func productionSmoke() async throws {
        try await FaultScenario.run("smoke") { scenario in
            // Google-shaped certificates for the project, valid around the real clock the server reads.
            let key = try TestSigningKey(
                commonName: "smoke", notValidBefore: Date() - 86_400, notValidAfter: Date() + 86_400)
            let certificates = scenario.folder + "/google-certs.json"
            try googleCertificateJSON(["kid-smoke": key]).write(to: URL(fileURLWithPath: certificates))
            let server = try await scenario.startServer(
                options: ["--firebase-project", authTestProjectId, "--google-certs", certificates],
                development: false)

            let tokenFile = scenario.folder + "/token"
            try TestTokens(
                signer: key, kid: "kid-smoke", claims: TestTokens.defaultClaims(uid: "smoke-user", now: Date())
            )
            .token().write(toFile: tokenFile, atomically: true, encoding: .utf8)
            let transactionFile = scenario.folder + "/transaction.jws"
            try FaultFixtures.pki.sign([
                "transactionId": "2000000999000001", "originalTransactionId": "2000000999000001",
                "bundleId": FaultFixtures.bundleId, "productId": FaultFixtures.products[1], "type": "Non-Consumable",
                "purchaseDate": Int64(Date().timeIntervalSince1970 * 1000) - 60_000,
                "signedDate": Int64(Date().timeIntervalSince1970 * 1000), "environment": "Sandbox",
                "price": 2_500_000, "currency": "KRW", "storefront": "KOR", "inAppOwnershipType": "PURCHASED",
            ]).write(toFile: transactionFile, atomically: true, encoding: .utf8)

            let full = [
                "--url", server.baseURL, "--token-file", tokenFile, "--signed-transaction-file", transactionFile,
            ]
            let first = try await Self.smoke(full)
            #expect(first.status == .exited(0), "\(first.checks)\n\(server.child.logTail())")
            #expect(Self.everyCheck.allSatisfy { first.checks[$0] == "passed" }, "\(first.checks)")
            // Again: the purchase is the same one (a duplicate), still every check passes.
            let second = try await Self.smoke(full)
            #expect(
                second.status == .exited(0) && second.checks.values.allSatisfy { $0 == "passed" }, "\(second.checks)")

            // Without a token: what needs no user, the rest skipped.
            let anonymous = try await Self.smoke(["--url", server.baseURL])
            #expect(anonymous.status == .exited(0), "\(anonymous.checks)")
            #expect(
                ["ready", "catalog", "forged_notification"].allSatisfy { anonymous.checks[$0] == "passed" }
                    && ["register", "forged_purchase", "purchase", "owned", "duplicate"].allSatisfy {
                        anonymous.checks[$0] == "skipped"
                    }, "\(anonymous.checks)")

            // The ledger: the sandbox purchase once, nothing of the forged proofs, and it still reconciles.
            let (purchases, forged, notifications) = try await scenario.cluster.withClient { client in
                try await client.query(
                    """
                    SELECT (SELECT count(*) FROM purchases WHERE transaction_id = '2000000999000001'
                                                           AND environment = 'Sandbox'),
                           (SELECT count(*) FROM purchases WHERE transaction_id LIKE 'smoke-forged-%'),
                           (SELECT count(*) FROM store_notifications)
                    """
                ).single().decode((Int, Int, Int).self)
            }
            #expect(purchases == 1 && forged == 0 && notifications == 0, "\(purchases) \(forged) \(notifications)")
            let reconciled = try await ServerProcess.reconcile(databaseURL: scenario.cluster.url)
            #expect(reconciled.passed, "\(reconciled.output)")

            // A server that does not answer fails the run (exit 1), naming the check.
            server.kill()
            let down = try await Self.smoke(["--url", server.baseURL, "--timeout", "2"])
            #expect(down.status == .exited(1) && down.checks["ready"] == "failed", "\(down.checks)")
            scenario.report("smoke: \(first.checks.count) checks passed twice against a production-configured server")
        }
    }
}
