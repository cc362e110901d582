import AppStoreServerAPI
import Crypto
import Foundation
import Logging
import Receipts
import TestSupport

/// Settings the App Store Server API tests share.
enum APITest {
    static let bundleId = "com.memolease.sesac1"
    static let pki = try! TestPKI()

    /// The verifier the shop uses for client data, trusting the test PKI.
    static let verifier = try! ReceiptVerifier(
        configuration: VerifierConfiguration(bundleId: bundleId, rootCertificates: [pki.rootCertificate]))

    static func fake(pageSize: Int = 2) -> FakeAppStore {
        FakeAppStore(pki: pki, bundleId: bundleId, pageSize: pageSize)
    }

    /// Fast settings against the fake: short timeout and backoff, generous rate limits unless given.
    static func configuration(
        _ fake: FakeAppStore, production: String, sandbox: String,
        environment: AppStoreServerAPIConfiguration.Environment = .production,
        rateLimits: RateLimits = RateLimits(
            perSecond: Dictionary(uniqueKeysWithValues: RateLimits.Endpoint.allCases.map { ($0, 1000) }),
            sandboxFactor: 1),
        key: P256.Signing.PrivateKey? = nil
    ) -> AppStoreServerAPIConfiguration {
        AppStoreServerAPIConfiguration(
            signingKey: SigningKey(key ?? fake.apiKey), keyId: fake.keyId, issuerId: fake.issuerId, bundleId: bundleId,
            environment: environment, productionBaseURL: production, sandboxBaseURL: sandbox,
            requestTimeout: .milliseconds(700), maxAttempts: 3, maxRetryWait: .seconds(2),
            initialBackoff: .milliseconds(20), rateLimits: rateLimits)
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "shopledger.appstore.tests")
        logger.logLevel = .critical
        return logger
    }

    static func client(_ configuration: AppStoreServerAPIConfiguration) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(configuration: configuration, prover: verifier, logger: quietLogger)
    }

    /// A client whose attempts, backoffs and `Retry-After` waits run on `clock`, its wall clock `clock.date`.
    static func client(
        _ configuration: AppStoreServerAPIConfiguration, clock: TestClock
    ) throws
        -> AppStoreServerAPIClient
    {
        try AppStoreServerAPIClient(
            configuration: configuration, prover: verifier, logger: quietLogger, clock: clock, date: { clock.date })
    }

    static func product(_ index: Int) -> String { "com.memolease.sesac1.sprout\(index)" }
}
