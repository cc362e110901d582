import AppStoreServerAPI
import Crypto
import Foundation
import Logging
import Testing

/// `SalesReportsClient` against the fake App Store Connect API: the request and token Apple documents,
/// and each answer Apple gives for a day (the report, no sales, not yet made, 429, 5xx, a hang).
@Suite("AppStoreServerAPI: App Store Connect sales report downloads")
struct SalesReportsClientTests {
    /// `Provider\tSKU\tUnits\nAPPLE\tcom.memolease.sesac1.sprout1\t1\n`, gzip'd (Python's gzip, mtime 0).
    static let report: [UInt8] = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x0b, 0x28, 0xca, 0x2f, 0xcb, 0x4c, 0x49, 0x2d,
        0xe2, 0x0c, 0xf6, 0x0e, 0xe5, 0x0c, 0xcd, 0xcb, 0x2c, 0x29, 0xe6, 0x72, 0x0c, 0x08, 0xf0, 0x71, 0xe5, 0x4c,
        0xce, 0xcf, 0xd5, 0xcb, 0x4d, 0xcd, 0xcd, 0xcf, 0x49, 0x4d, 0x2c, 0x4e, 0xd5, 0x2b, 0x4e, 0x2d, 0x4e, 0x4c,
        0x36, 0xd4, 0x2b, 0x2e, 0x28, 0xca, 0x2f, 0x2d, 0x31, 0xe4, 0x34, 0xe4, 0x02, 0x00, 0x59, 0x13, 0x39, 0xdb,
        0x38, 0x00, 0x00, 0x00,
    ]

    static func client(
        _ fake: FakeAppStoreConnect, _ baseURL: String, timeout: Duration = .milliseconds(700)
    ) throws -> SalesReportsClient {
        var logger = Logger(label: "sales-reports-tests")
        logger.logLevel = .critical
        return try SalesReportsClient(
            configuration: AppStoreConnectConfiguration(
                signingKey: SigningKey(fake.apiKey), keyId: fake.keyId, issuerId: fake.issuerId,
                vendorNumber: fake.vendorNumber, baseURL: baseURL, requestTimeout: timeout,
                initialBackoff: .milliseconds(10)),
            logger: logger)
    }

    @Test(
        "a day's report comes as Apple served it, asked for with the documented filters and an App Store Connect token")
    func downloadsTheReport() async throws {
        let fake = FakeAppStoreConnect()
        fake.add(report: Self.report, for: "2026-11-25")
        try await fake.run { base in
            let download = try await Self.client(fake, base).dailySummary(date: "2026-11-25", version: "1_0")
            #expect(download == .report(gzip: Self.report))
        }
        let request = try #require(fake.requests.first)
        #expect(fake.requests.count == 1)
        #expect(request.tokenProblem == nil)
        #expect(
            request.query == [
                "filter[frequency]": "DAILY", "filter[reportDate]": "2026-11-25", "filter[reportSubType]": "SUMMARY",
                "filter[reportType]": "SALES", "filter[vendorNumber]": fake.vendorNumber, "filter[version]": "1_0",
            ])
        #expect(request.claims["aud"] == "appstoreconnect-v1" && request.claims["iss"] == fake.issuerId)
        #expect(request.claims["bid"] == nil)
    }

    @Test("404 tells a day without sales from a report not made yet")
    func notFoundAnswers() async throws {
        let fake = FakeAppStoreConnect()
        fake.noSales(on: "2026-11-24")
        try await fake.run { base in
            let client = try Self.client(fake, base)
            #expect(
                try await client.dailySummary(date: "2026-11-24")
                    == .noSales(detail: "There were no sales for the date specified."))
            guard case .notYetAvailable(let detail) = try await client.dailySummary(date: "2026-11-26") else {
                Issue.record("a day not made yet was not told apart")
                return
            }
            #expect(detail.contains("not available yet"))
        }
        // Without a version Apple's default is asked for: no filter[version].
        #expect(fake.requests.allSatisfy { $0.query["filter[version]"] == nil && $0.tokenProblem == nil })
    }

    @Test("429 fails at once as rate limited, with Apple's detail and X-Rate-Limit; 410 and 403 fail as API errors")
    func refusals() async throws {
        let fake = FakeAppStoreConnect()
        fake.add(report: Self.report, for: "2026-11-25")
        fake.script(
            .rateLimited, .status(410, detail: "Report is no longer available."),
            .status(403, detail: "The API key in use does not allow this request"))
        try await fake.run { base in
            let client = try Self.client(fake, base)
            let limited = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.dailySummary(date: "2026-11-25")
            }
            #expect(limited?.code == .rateLimited && limited?.httpStatus == 429)
            #expect(limited?.message.contains("user-hour-rem:0") == true)
            #expect(fake.requests.count == 1, "a 429 is not retried within the command")
            let gone = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.dailySummary(date: "2026-11-25")
            }
            #expect(gone?.httpStatus == 410 && gone?.message.contains("no longer available") == true)
            let forbidden = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.dailySummary(date: "2026-11-25")
            }
            #expect(forbidden?.code == .apiError && forbidden?.httpStatus == 403)
        }
        #expect(fake.requests.count == 3)
    }

    @Test("5xx and a hang are retried with backoff, up to the attempts; then the failure is thrown")
    func retries() async throws {
        let fake = FakeAppStoreConnect()
        fake.add(report: Self.report, for: "2026-11-25")
        fake.script(.status(503, detail: "busy"), .hang(.seconds(2)))
        try await fake.run { base in
            let client = try Self.client(fake, base, timeout: .milliseconds(300))
            #expect(try await client.dailySummary(date: "2026-11-25") == .report(gzip: Self.report))
            #expect(fake.requests.count == 3)
            fake.script(.status(500, detail: "a"), .status(500, detail: "b"), .status(500, detail: "c"))
            let failed = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.dailySummary(date: "2026-11-25")
            }
            #expect(failed?.httpStatus == 500 && failed?.message.contains("c") == true)
            #expect(fake.requests.count == 6)
        }
    }

    @Test("a token Apple refuses is renewed once; a wrong key fails as 401")
    func tokens() async throws {
        let fake = FakeAppStoreConnect()
        fake.add(report: Self.report, for: "2026-11-25")
        try await fake.run { base in
            var logger = Logger(label: "sales-reports-tests")
            logger.logLevel = .critical
            let wrongKey = try SalesReportsClient(
                configuration: AppStoreConnectConfiguration(
                    signingKey: SigningKey(P256.Signing.PrivateKey()), keyId: fake.keyId, issuerId: fake.issuerId,
                    vendorNumber: fake.vendorNumber, baseURL: base, initialBackoff: .milliseconds(10)),
                logger: logger)
            let refused = await #expect(throws: AppStoreServerAPIError.self) {
                try await wrongKey.dailySummary(date: "2026-11-25")
            }
            #expect(refused?.httpStatus == 401)
        }
        #expect(fake.requests.count == 2, "one renewal, then the failure")
        #expect(fake.requests.allSatisfy { $0.tokenProblem == "signature does not verify with the key" })
    }

    @Test("a 200 that is not gzip, a bad date or version, and bad settings are refused")
    func refusesWhatCannotBeRight() async throws {
        let fake = FakeAppStoreConnect()
        fake.script(.notGzip)
        try await fake.run { base in
            let client = try Self.client(fake, base)
            let notGzip = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.dailySummary(date: "2026-11-25")
            }
            #expect(notGzip?.code == .unexpectedResponse)
            for (date, version) in [("2026-1-25", nil), ("2026/11/25", nil), ("2026-11-25", "1.0"), ("", "1_0")] {
                let refused = await #expect(throws: AppStoreServerAPIError.self) {
                    try await client.dailySummary(date: date, version: version)
                }
                #expect(refused?.code == .invalidInput)
            }
        }
        #expect(fake.requests.count == 1, "nothing is sent for a bad date or version")
        for vendor in ["", "85O12345", String(repeating: "1", count: 21)] {
            #expect(throws: AppStoreServerAPIError.self) {
                try SalesReportsClient(
                    configuration: AppStoreConnectConfiguration(
                        signingKey: SigningKey(fake.apiKey), keyId: fake.keyId, issuerId: fake.issuerId,
                        vendorNumber: vendor))
            }
        }
        #expect(throws: AppStoreServerAPIError.self) {
            try SalesReportsClient(
                configuration: AppStoreConnectConfiguration(
                    signingKey: SigningKey(fake.apiKey), keyId: fake.keyId, issuerId: fake.issuerId,
                    vendorNumber: fake.vendorNumber, tokenLifetime: .seconds(21 * 60)))
        }
    }
}
