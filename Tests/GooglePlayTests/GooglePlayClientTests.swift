import Foundation
import GooglePlay
import Logging
import TestSupport
import Testing
import _CryptoExtras

enum PlayTest {
    static let packageName = "com.memolease.sesac1"

    static var quietLogger: Logger {
        var logger = Logger(label: "shopledger.googleplay.tests")
        logger.logLevel = ProcessInfo.processInfo.environment["PLAY_TEST_LOG"] == nil ? .critical : .warning
        return logger
    }

    /// Fast settings against the fake: short timeout and backoff.
    static func configuration(
        _ fake: FakeGooglePlay, baseURL: String, key: _RSA.Signing.PrivateKey? = nil, maxAttempts: Int = 3
    ) throws -> GooglePlayConfiguration {
        let credential = try ServiceAccountCredential(json: fake.keyFileJSON(tokenURI: baseURL + "/token", key: key))
        return GooglePlayConfiguration(
            packageName: fake.packageName, credential: credential, apiBaseURL: baseURL,
            requestTimeout: .milliseconds(700), maxAttempts: maxAttempts, maxRetryWait: .seconds(2),
            initialBackoff: .milliseconds(20), requestsPerSecond: 1000)
    }

    static func client(
        _ fake: FakeGooglePlay, baseURL: String, key: _RSA.Signing.PrivateKey? = nil
    ) throws
        -> GooglePlayClient
    {
        try GooglePlayClient(configuration: configuration(fake, baseURL: baseURL, key: key), logger: quietLogger)
    }
}

@Suite("Google Play client against the fake Google")
struct GooglePlayClientTests {
    @Test("a purchase is read with an access token got by a signed assertion, and the token is reused")
    func readsPurchase() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-1", orderId: "GPA.1111-2222-3333-44444", accountId: "acct"))
        try await fake.run { base in
            let client = try PlayTest.client(fake, baseURL: base)
            let purchase = try await client.productPurchase(productId: "sprout2", token: "tok-1")
            #expect(purchase.purchaseState == .purchased)
            #expect(purchase.orderId == "GPA.1111-2222-3333-44444")
            #expect(purchase.obfuscatedExternalAccountId == "acct")
            #expect(purchase.isTest == false)
            #expect(purchase.isAcknowledged == false)
            #expect(purchase.purchaseTimeMillis == 1_763_000_000_000)
            try await client.acknowledge(productId: "sprout2", token: "tok-1")
            try await client.consume(productId: "sprout2", token: "tok-1")
            let again = try await client.productPurchase(productId: "sprout2", token: "tok-1")
            #expect(again.isAcknowledged && again.isConsumed)
        }
        #expect(fake.tokenRequests == 1)
        #expect(fake.assertionProblems.isEmpty)
    }

    @Test("an assertion signed with another key is refused by the token endpoint")
    func wrongKeyRefused() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-1", orderId: "GPA.1"))
        let otherKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        try await fake.run { base in
            let client = try PlayTest.client(fake, baseURL: base, key: otherKey)
            await #expect(throws: GooglePlayError.self) {
                try await client.productPurchase(productId: "sprout2", token: "tok-1")
            }
            do {
                _ = try await client.productPurchase(productId: "sprout2", token: "tok-1")
            } catch let error as GooglePlayError {
                #expect(error.code == .authentication)
            }
        }
        #expect(fake.assertionProblems.first == "signature")
    }

    @Test("an unknown token is Google's 400 INVALID_ARGUMENT, not retried")
    func unknownToken() async throws {
        let fake = FakeGooglePlay()
        try await fake.run { base in
            let client = try PlayTest.client(fake, baseURL: base)
            do {
                _ = try await client.productPurchase(productId: "sprout2", token: "nope")
                Issue.record("an unknown token was answered")
            } catch let error as GooglePlayError {
                #expect(error.code == .apiError)
                #expect(error.httpStatus == 400)
                #expect(error.apiStatus == "INVALID_ARGUMENT")
                #expect(!error.isUnavailable)
            }
        }
        #expect(fake.requests.count == 1)
    }

    @Test("5xx and a short 429 are retried; a Retry-After past the longest wait is not waited for")
    func retries() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-1", orderId: "GPA.1"))
        try await fake.run { base in
            let client = try PlayTest.client(fake, baseURL: base)
            fake.script(.status(503, status: "UNAVAILABLE"))
            fake.script(.rateLimited(retryAfterSeconds: 0))
            let purchase = try await client.productPurchase(productId: "sprout2", token: "tok-1")
            #expect(purchase.purchaseState == .purchased)
            #expect(fake.requests.count == 3)

            fake.script(.rateLimited(retryAfterSeconds: 600))
            let start = ContinuousClock.now
            do {
                _ = try await client.productPurchase(productId: "sprout2", token: "tok-1")
                Issue.record("a 429 with a long Retry-After was waited for")
            } catch let error as GooglePlayError {
                #expect(error.code == .rateLimited)
                #expect(error.isUnavailable)
            }
            #expect(ContinuousClock.now - start < .seconds(2))
        }
    }

    @Test("a call inside a request ends by its deadline when Google hangs")
    func deadline() async throws {
        let fake = FakeGooglePlay()
        fake.add(.init(productId: "sprout2", token: "tok-1", orderId: "GPA.1"))
        try await fake.run { base in
            let client = try PlayTest.client(fake, baseURL: base)
            _ = try await client.productPurchase(productId: "sprout2", token: "tok-1")
            fake.script(.hang(.seconds(10)), times: 5)
            let start = ContinuousClock.now
            do {
                _ = try await client.within(.now + .milliseconds(400)).productPurchase(
                    productId: "sprout2", token: "tok-1")
                Issue.record("a hanging Google was answered")
            } catch let error as GooglePlayError {
                #expect(error.isUnavailable)
            }
            #expect(ContinuousClock.now - start < .milliseconds(1500))
        }
    }

    @Test("voided purchases are read page by page")
    func voidedPages() async throws {
        let fake = FakeGooglePlay(pageSize: 2)
        for index in 1...5 {
            fake.add(.init(productId: "sprout2", token: "tok-\(index)", orderId: "GPA.\(index)"))
            fake.void("tok-\(index)", atMillis: 1_763_100_000_000 + Int64(index))
        }
        let seen = try await fake.run { base in
            let client = try PlayTest.client(fake, baseURL: base)
            var pages: [[VoidedPurchase]] = []
            try await client.voidedPurchases(since: Date(timeIntervalSince1970: 1_763_000_000)) { pages.append($0) }
            return pages
        }
        #expect(seen.map(\.count) == [2, 2, 1])
        #expect(seen.flatMap { $0 }.map(\.orderId) == ["GPA.1", "GPA.2", "GPA.3", "GPA.4", "GPA.5"])
    }

    @Test("a key file that is not a service account's is refused with a clear error")
    func keyFileRefused() throws {
        #expect(throws: GooglePlayError.self) { try ServiceAccountCredential(json: Data("{}".utf8)) }
        #expect(throws: GooglePlayError.self) {
            try ServiceAccountCredential(
                json: Data(#"{"type":"service_account","client_email":"a@b.c","private_key":"nope"}"#.utf8))
        }
        #expect(!GooglePlayConfiguration.isPackageName("not a package"))
        #expect(GooglePlayConfiguration.isPackageName("com.memolease.sesac1"))
    }
}
