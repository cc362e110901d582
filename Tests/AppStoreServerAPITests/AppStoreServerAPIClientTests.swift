import Crypto
import Foundation
import Receipts
import TestSupport
import Testing

@testable import AppStoreServerAPI

@Suite("AppStoreServerAPI client against a fake Apple")
struct AppStoreServerAPIClientTests {
    typealias Transaction = FakeAppStore.Transaction

    /// Runs `body` with a fake (prepared by `prepare`) and a client pointed at it, whose waits run on
    /// `clock` when one is given.
    func withFake(
        pageSize: Int = 2,
        clock: TestClock? = nil,
        prepare: (FakeAppStore) -> Void = { _ in },
        configure: @escaping @Sendable (inout AppStoreServerAPIConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (FakeAppStore, AppStoreServerAPIClient) async throws -> Void
    ) async throws {
        let fake = APITest.fake(pageSize: pageSize)
        prepare(fake)
        try await fake.run { production, sandbox in
            var configuration = APITest.configuration(fake, production: production, sandbox: sandbox)
            configure(&configuration)
            let client = try clock.map { try APITest.client(configuration, clock: $0) } ?? APITest.client(configuration)
            try await body(fake, client)
            #expect(fake.requests.allSatisfy { $0.tokenProblem == nil }, "the fake refused a token")
        }
    }

    @Test("Get Transaction Info: a verified transaction with Apple's price; one token for several calls")
    func transactionInfo() async throws {
        try await withFake(prepare: {
            $0.add(Transaction(id: "1000001", productId: APITest.product(2), customer: "a", price: 3_300_000))
        }) { fake, client in
            for _ in 0..<3 {
                let answer = try await client.transactionInfo("1000001")
                #expect(answer.environment == .production)
                let transaction = try #require(answer.transactions.first)
                #expect(transaction.transactionId == "1000001" && transaction.productId == APITest.product(2))
                #expect(transaction.priceMilli == 3_300_000 && transaction.currency == "KRW")
            }
            #expect(fake.requests.map(\.path) == Array(repeating: "/inApps/v1/transactions/1000001", count: 3))
            #expect(fake.distinctTokens == 1)
        }
    }

    @Test("Get Transaction History: every page by revision, one customer only, oldest first, other types set aside")
    func transactionHistory() async throws {
        try await withFake(prepare: { fake in
            for index in 1...5 {
                fake.add(
                    Transaction(
                        id: "20\(index)", productId: APITest.product(index), customer: "a",
                        purchaseMs: 1_763_000_000_000 + Int64(index)))
            }
            fake.add(
                Transaction(
                    id: "206", productId: "com.memolease.sesac1.coins", customer: "a", purchaseMs: 1_763_000_000_010,
                    type: "Consumable"))
            fake.add(Transaction(id: "301", productId: APITest.product(1), customer: "b"))
        }) { fake, client in
            let history = try await client.transactionHistory("203")
            #expect(history.transactions.map(\.transactionId) == ["201", "202", "203", "204", "205"])
            #expect(history.skipped.count == 1 && history.skipped.first?.reason == .unsupportedProductType)
            let pages = fake.requests.map(\.path)
            #expect(pages.count == 3 && pages.allSatisfy { $0 == "/inApps/v2/history/203" })
        }
    }

    @Test("Get Refund History: the customer's refunded transactions, with their revocation")
    func refundHistory() async throws {
        try await withFake(prepare: { fake in
            for index in 1...4 {
                fake.add(Transaction(id: "40\(index)", productId: APITest.product(index), customer: "a"))
            }
            fake.refund("402", atMs: 1_763_100_000_000)
            fake.refund("404", atMs: 1_763_200_000_000)
        }) { _, client in
            let refunds = try await client.refundHistory("401")
            #expect(Set(refunds.transactions.map(\.transactionId)) == ["402", "404"])
            #expect(refunds.transactions.allSatisfy { $0.revocationDate != nil && $0.revocationType == "REFUND_FULL" })
        }
    }

    @Test("Look Up Order ID: valid order with its transactions; unknown order invalid")
    func orderLookup() async throws {
        try await withFake(prepare: { fake in
            fake.add(Transaction(id: "501", productId: APITest.product(1), customer: "a"))
            fake.addOrder("MQ5LXY2K3P", transactions: ["501"])
        }) { _, client in
            let found = try await client.lookUpOrder("MQ5LXY2K3P")
            #expect(found.isValid && found.result.transactions.map(\.transactionId) == ["501"])
            let missing = try await client.lookUpOrder("NOSUCHORDER")
            #expect(!missing.isValid && missing.result.transactions.isEmpty)
        }
    }

    @Test("Get Notification History: every page by paginationToken within the dates, each verified")
    func notificationHistory() async throws {
        // Signed a day ago: the test PKI's leaf is valid from a year ago, and chains are checked at signedDate.
        let base = Int64(Date().timeIntervalSince1970 * 1000) - 86_400_000
        try await withFake(prepare: { fake in
            fake.add(Transaction(id: "601", productId: APITest.product(1), customer: "a"))
            for index in 0..<5 {
                fake.add(
                    FakeAppStore.Notification(
                        uuid: "uuid-\(index)", type: "REFUND", signedDateMs: base + Int64(index) * 1000,
                        transactionId: "601"))
            }
            fake.add(
                FakeAppStore.Notification(
                    uuid: "too-old", type: "REFUND", signedDateMs: base - 86_400_000, transactionId: "601"))
        }) { fake, client in
            let entries = try await client.notificationHistory(
                from: Date(timeIntervalSince1970: TimeInterval(base) / 1000 - 60),
                to: Date(timeIntervalSince1970: TimeInterval(base) / 1000 + 60))
            #expect(entries.map(\.notification.notificationUUID) == (0..<5).map { "uuid-\($0)" })
            #expect(
                entries.allSatisfy {
                    $0.notification.transaction?.transactionId == "601" && $0.lastAttempt?.result == "TIMED_OUT"
                })
            #expect(fake.requests.count == 3)
        }
    }

    @Test("Request a Test Notification, then its status: verified TEST notification, delivered")
    func testNotification() async throws {
        try await withFake { _, client in
            let token = try await client.requestTestNotification()
            let status = try await client.testNotificationStatus(token)
            #expect(status.notification.notificationType == .test && status.delivered)
            await #expect(throws: AppStoreServerAPIError.self) {
                try await client.testNotificationStatus("no-such-token")
            }
        }
    }

    @Test("Sandbox fallback: production's 4040010 sends the look-up to the sandbox; unknown in both is not found")
    func sandboxFallback() async throws {
        try await withFake(prepare: {
            $0.add(Transaction(id: "701", productId: APITest.product(1), customer: "a", environment: .sandbox))
        }) { fake, client in
            let answer = try await client.transactionInfo("701")
            #expect(answer.environment == .sandbox && answer.transactions.first?.environment == .sandbox)
            #expect(fake.requests.map(\.environment) == ["production", "sandbox"])
            do {
                _ = try await client.transactionHistory("999")
                Issue.record("an unknown transaction was found")
            } catch let error as AppStoreServerAPIError {
                #expect(error.isNotFound && error.apiErrorCode == 4_040_010 && error.httpStatus == 404)
            }
        }
    }

    @Test("Sandbox-only configuration never asks production")
    func sandboxOnly() async throws {
        try await withFake(
            prepare: {
                $0.add(Transaction(id: "702", productId: APITest.product(1), customer: "a", environment: .sandbox))
            },
            configure: { $0.environment = .sandbox }
        ) { fake, client in
            _ = try await client.transactionInfo("702")
            #expect(fake.requests.map(\.environment) == ["sandbox"])
        }
    }

    // The retry tests run on a clock they move: a wait the client chose is a sleeper on it (its length read
    // from when it wakes), and a call that returns while the clock stands still did not wait (the time limit
    // ends one that does).
    @Test("500 is retried after the backoff; 429 waits until Retry-After (UNIX milliseconds)", .timeLimit(.minutes(1)))
    func retries() async throws {
        let clock = TestClock()
        try await withFake(
            clock: clock, prepare: { $0.add(Transaction(id: "801", productId: APITest.product(1), customer: "a")) }
        ) { fake, client in
            // The first backoff, 20 ms: the second request goes out when it has passed, not before.
            fake.script(.status(500, errorCode: 5_000_000))
            var start = clock.now
            let afterServerError = Task { try await client.transactionInfo("801") }
            let backoff = try #require(await clock.waitForSleeper(wakingAt: start + .milliseconds(20)))
            #expect(fake.requests.count == 1)
            clock.advance(to: backoff - .milliseconds(1))
            #expect(clock.wakeTimes.contains(backoff) && fake.requests.count == 1, "no retry before the backoff")
            clock.advance(to: backoff)
            _ = try await afterServerError.cancellableValue
            #expect(fake.requests.count == 2)

            // Retry-After 600 ms on: the client waits exactly that long, then asks again.
            fake.resetRequests()
            start = clock.now
            fake.script(.rateLimitedUntil(clock.date.addingTimeInterval(0.6)))
            let afterRateLimit = Task { try await client.transactionInfo("801") }
            let retryAfter = try #require(
                await clock.waitForSleeper(wakingAt: start + .milliseconds(600)), "\(clock.wakeTimes)")
            #expect(fake.requests.count == 1)
            clock.advance(to: retryAfter - .milliseconds(1))
            #expect(clock.wakeTimes.contains(retryAfter) && fake.requests.count == 1, "no retry before Retry-After")
            clock.advance(to: retryAfter)
            _ = try await afterRateLimit.cancellableValue
            #expect(fake.requests.count == 2)

            // Three 5xx: 3 attempts (the configured most), after backoffs of 20 then 40 ms, then Apple's error.
            fake.resetRequests()
            start = clock.now
            fake.script(.status(500, errorCode: nil), .status(503, errorCode: nil), .status(500, errorCode: nil))
            let failing = Task { try await client.transactionInfo("801") }
            clock.advance(to: try #require(await clock.waitForSleeper(wakingAt: start + .milliseconds(20))))
            clock.advance(to: try #require(await clock.waitForSleeper(wakingAt: start + .milliseconds(60))))
            let error = await #expect(throws: AppStoreServerAPIError.self) { try await failing.cancellableValue }
            #expect(error?.code == .apiError && error?.httpStatus == 500, "\(String(describing: error))")
            #expect(fake.requests.count == 3)
        }
    }

    @Test(
        "A Retry-After beyond the longest wait fails at once as rate limited, naming the time", .timeLimit(.minutes(1)))
    func retryAfterBeyondCap() async throws {
        let clock = TestClock()
        try await withFake(
            clock: clock, prepare: { $0.add(Transaction(id: "802", productId: APITest.product(1), customer: "a")) }
        ) { fake, client in
            let retryAt = clock.date.addingTimeInterval(3600)
            fake.script(.rateLimitedUntil(retryAt))
            // Waiting would take the longest wait, 2 s, on the clock that stands still: the call returns
            // without it moving.
            let error = await #expect(throws: AppStoreServerAPIError.self) { try await client.transactionInfo("802") }
            #expect(error?.code == .rateLimited && error?.apiErrorCode == 4_290_000, "\(String(describing: error))")
            #expect(abs((error?.retryAt ?? .distantPast).timeIntervalSince(retryAt)) < 0.001)
            #expect(fake.requests.count == 1)
        }
    }

    @Test("A server that hangs times out; the retry gets the answer", .timeLimit(.minutes(1)))
    func timeout() async throws {
        let clock = TestClock()
        try await withFake(
            clock: clock, prepare: { $0.add(Transaction(id: "803", productId: APITest.product(1), customer: "a")) },
            configure: { $0.maxAttempts = 1 }
        ) { fake, client in
            // The fake would answer after 120 s (or when this test ends): the attempt's 700 ms timeout, on the
            // clock, is what ends the call.
            fake.script(.hang(.seconds(120)))
            let start = clock.now
            let call = Task { try await client.transactionInfo("803") }
            try #require(await fake.waitForRequests(1), "the request reaches the fake, which hangs")
            clock.advance(to: try #require(await clock.waitForSleeper(wakingAt: start + .milliseconds(700))))
            let error = await #expect(throws: AppStoreServerAPIError.self) { try await call.cancellableValue }
            #expect(error?.code == .timeout, "\(String(describing: error))")
        }
        let retryClock = TestClock()
        try await withFake(
            clock: retryClock, prepare: { $0.add(Transaction(id: "804", productId: APITest.product(1), customer: "a")) }
        ) { fake, client in
            fake.script(.hang(.seconds(120)))
            let start = retryClock.now
            let call = Task { try await client.transactionInfo("804") }
            // The timeout (of the attempt the fake hangs), then the 20 ms backoff, then the second attempt, answered.
            try #require(await fake.waitForRequests(1), "the request reaches the fake, which hangs")
            retryClock.advance(
                to: try #require(await retryClock.waitForSleeper(wakingAt: start + .milliseconds(700))))
            retryClock.advance(
                to: try #require(await retryClock.waitForSleeper(wakingAt: start + .milliseconds(720))))
            let answer = try await call.cancellableValue
            #expect(answer.transactions.count == 1 && fake.requests.count == 2)
            fake.clearFaults()
        }
    }

    @Test("401: the token is signed again once, then the error is Apple's")
    func unauthorized() async throws {
        let fake = APITest.fake()
        fake.add(Transaction(id: "901", productId: APITest.product(1), customer: "a"))
        try await fake.run { production, sandbox in
            let client = try APITest.client(
                APITest.configuration(fake, production: production, sandbox: sandbox, key: P256.Signing.PrivateKey()))
            do {
                _ = try await client.transactionInfo("901")
                Issue.record("a token signed with the wrong key was accepted")
            } catch let error as AppStoreServerAPIError {
                #expect(error.code == .apiError && error.httpStatus == 401)
            }
            #expect(fake.requests.count == 2)
            #expect(fake.requests.allSatisfy { $0.tokenProblem == "signature does not verify with the key" })
        }
    }

    @Test("A payload the server signed with another key is refused, in every endpoint")
    func forgedPayload() async throws {
        try await withFake(prepare: { fake in
            fake.add(Transaction(id: "911", productId: APITest.product(1), customer: "a"))
            fake.add(
                FakeAppStore.Notification(
                    uuid: "forged-1", type: "REFUND", signedDateMs: Int64(Date().timeIntervalSince1970 * 1000) - 60_000,
                    transactionId: "911"))
        }) { fake, client in
            let calls: [@Sendable () async throws -> Void] = [
                { _ = try await client.transactionInfo("911") },
                { _ = try await client.transactionHistory("911") },
                { _ = try await client.notificationHistory(from: Date().addingTimeInterval(-3600)) },
            ]
            for call in calls {
                // Every attempt is forged: on a loaded machine a first answer can miss the 700 ms timeout,
                // and the retry must not get a genuine payload that would hide a refusal never made.
                fake.script(.forgedSignature, .forgedSignature, .forgedSignature)
                do {
                    try await call()
                    Issue.record("a forged payload was accepted")
                } catch let error as AppStoreServerAPIError {
                    #expect(error.code == .unverifiedPayload && error.refusal?.reason == .invalidSignature)
                }
                fake.clearFaults()
            }
        }
    }

    @Test(
        "Per-endpoint rate limit: no second holds more requests than the limit; sandbox gets a tenth",
        .timeLimit(.minutes(1)))
    func rateLimit() async throws {
        let clock = TestClock()
        #expect(RateLimits.apple.requestsPerSecond(.transactionInfo, sandbox: false) == 50)
        #expect(RateLimits.apple.requestsPerSecond(.transactionInfo, sandbox: true) == 5)
        #expect(RateLimits.apple.requestsPerSecond(.orderLookup, sandbox: false) == 10)
        #expect(RateLimits.apple.requestsPerSecond(.testNotification, sandbox: false) == 1)
        try await withFake(
            clock: clock, prepare: { $0.add(Transaction(id: "921", productId: APITest.product(1), customer: "a")) },
            configure: { $0.rateLimits = RateLimits(perSecond: [.transactionInfo: 8, .orderLookup: 1000]) }
        ) { fake, client in
            // One at a time, so the order requests reach the fake is the order they got their token; an
            // order look-up first opens the connection (another endpoint, another bucket).
            _ = try await client.lookUpOrder("WARMUP")
            fake.resetRequests()
            let start = clock.now
            let calls = Task { for _ in 0..<20 { _ = try await client.transactionInfo("921") } }
            // 8 at once, then one every 1/8 s: request i (i >= 8) waits on the clock until (i - 7) / 8 s, and
            // is not sent before.
            for index in 8..<20 {
                let due = start + .milliseconds((index - 7) * 125)
                let wake = try #require(
                    await clock.waitForSleeper(wakingAt: due, tolerance: .microseconds(10)),
                    "request \(index + 1) waits for its token until \(due - start): \(clock.wakeTimes)")
                #expect(fake.requests.count == index, "request \(index + 1) was sent before its token")
                clock.advance(to: wake)
            }
            try await calls.cancellableValue
            #expect(fake.requests.count == 20)
            // 20 requests took 1.5 s of the clock: no sleeper woke early, none was skipped.
            #expect(clock.now - start >= .milliseconds(1500) - .microseconds(10))
        }
    }

    @Test(
        "Each endpoint and environment has its own bucket: an empty one makes no other wait",
        .timeLimit(.minutes(1)))
    func rateLimitBucketsAreSeparate() async throws {
        // One request per second everywhere, on a clock the test moves: a call that returns while the
        // clock stands still did not wait (sharing a bucket, the calls below would wait for it).
        let clock = TestClock()
        let limiter = RateLimiter(limits: RateLimits(perSecond: [.transactionInfo: 1, .orderLookup: 1]), clock: clock)
        try await limiter.acquire(.transactionInfo, sandbox: false)
        try await limiter.acquire(.orderLookup, sandbox: false)
        try await limiter.acquire(.transactionInfo, sandbox: true)
        #expect(clock.sleepers == 0)
        // The emptied bucket itself does wait, a second, so the calls above could have waited too.
        let emptied = Task { try await limiter.acquire(.transactionInfo, sandbox: false) }
        try #require(await clock.waitForSleepers(1), "the emptied bucket's call waits")
        clock.advance(by: .milliseconds(999))
        #expect(clock.sleepers == 1)
        clock.advance(by: .milliseconds(1))
        try await emptied.value
    }

    @Test("The fake refuses tokens that break a claim, so the checks above can fail")
    func fakeChecksClaims() throws {
        let fake = APITest.fake()
        func token(
            _ claims: [String: Any], header: [String: Any] = ["alg": "ES256", "kid": "FAKEKEY123", "typ": "JWT"]
        ) -> String {
            let input = TestPKI.base64URL(TestPKI.json(header)) + "." + TestPKI.base64URL(TestPKI.json(claims))
            return "Bearer " + input + "."
                + TestPKI.base64URL(try! fake.apiKey.signature(for: Data(input.utf8)).rawRepresentation)
        }
        let now = Int64(Date().timeIntervalSince1970)
        let good: [String: Any] = [
            "iss": fake.issuerId, "iat": now, "exp": now + 1200, "aud": "appstoreconnect-v1", "bid": APITest.bundleId,
        ]
        #expect(fake.checkToken(token(good)) == nil)
        #expect(fake.checkToken(token(good.merging(["exp": now + 7200]) { $1 })) != nil)
        #expect(fake.checkToken(token(good.merging(["aud": "other"]) { $1 })) != nil)
        #expect(fake.checkToken(token(good.merging(["bid": "com.other"]) { $1 })) != nil)
        #expect(fake.checkToken(token(good.merging(["iss": "other"]) { $1 })) != nil)
        #expect(fake.checkToken(token(good.merging(["exp": now - 10]) { $1 })) != nil)
        #expect(fake.checkToken(token(good, header: ["alg": "ES256", "kid": "OTHER", "typ": "JWT"])) != nil)
    }

    @Test("The key never shows in descriptions; a bad .p8 is refused without quoting it")
    func keyNeverShown() throws {
        let key = P256.Signing.PrivateKey()
        let signing = try SigningKey(pem: key.pemRepresentation)
        #expect(signing.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        #expect(!"\(signing)".contains(key.pemRepresentation) && !String(reflecting: signing).contains("BEGIN"))
        do {
            _ = try SigningKey(pem: "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----")
            Issue.record("a broken key was accepted")
        } catch {
            #expect(error.code == .configuration && !error.message.contains("c2VjcmV0"))
        }
    }
}
