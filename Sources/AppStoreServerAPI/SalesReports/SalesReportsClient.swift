import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Downloads Apple's daily Summary Sales Report from the App Store Connect API
/// (`GET /v1/salesReports`, Download Sales and Trends Reports), as Apple serves it: gzip'd text.
///
/// Tokens are ES256 JWTs signed with the App Store Connect API key (`iss` the issuer id, `aud`
/// `appstoreconnect-v1`, no `bid`), reused until shortly before they expire. Apple answers 200 with
/// `application/a-gzip`, or an `ErrorResponse` (`{"errors": [{"status", "code", "title", "detail"}]}`):
/// 404 both for a day without sales ("There were no sales for the date specified.") and for a report
/// not made yet ("… not available yet …"), 410 for one past Apple's horizon, 429 past the hourly limit.
///
/// Nothing of the answer is trusted: the body is read up to ``maxReportBytes``, must start with gzip's
/// magic bytes, and error details are cut and cleaned before they are shown. What the report says is
/// the importer's to check.
public struct SalesReportsClient: Sendable {
    /// What Apple answered for a day.
    public enum Download: Sendable, Equatable {
        /// The report, gzip'd, byte for byte as served.
        case report(gzip: [UInt8])
        /// Apple says the account sold nothing that day (404 "There were no sales for the date specified.").
        case noSales(detail: String)
        /// Apple has not made that day's report yet (404 otherwise): ask again later. Daily reports come
        /// out the next day, Pacific time.
        case notYetAvailable(detail: String)
    }

    public let configuration: AppStoreConnectConfiguration
    let httpClient: HTTPClient
    let signer: BearerTokenSigner
    let logger: Logger

    /// Largest report read, gzip'd, in bytes (a daily summary of a shop this size is kilobytes).
    public static let maxReportBytes = 64 * 1024 * 1024
    /// Largest error body read, in bytes.
    static let maxErrorBytes = 64 * 1024

    public init(
        configuration: AppStoreConnectConfiguration, httpClient: HTTPClient = .shared,
        logger: Logger = Logger(label: "shopledger.appstoreconnect")
    ) throws(AppStoreServerAPIError) {
        try configuration.validate()
        self.configuration = configuration
        self.httpClient = httpClient
        self.logger = logger
        self.signer = BearerTokenSigner(
            key: configuration.signingKey, keyId: configuration.keyId, issuerId: configuration.issuerId,
            bundleId: nil, lifetime: configuration.tokenLifetime)
    }

    /// The SALES / SUMMARY / DAILY report of `date` (`YYYY-MM-DD`, Apple's day, Pacific time).
    ///
    /// - Parameter version: the report's format version (`1_0`, `1_1`, …); Apple's default when nil.
    public func dailySummary(date: String, version: String? = nil) async throws -> Download {
        guard Self.isDate(date) else {
            throw AppStoreServerAPIError(.invalidInput, "the report date must be YYYY-MM-DD")
        }
        if let version, !Self.isVersion(version) {
            throw AppStoreServerAPIError(.invalidInput, "the report version must look like 1_0")
        }
        var query = [
            ("filter[frequency]", "DAILY"), ("filter[reportDate]", date), ("filter[reportSubType]", "SUMMARY"),
            ("filter[reportType]", "SALES"), ("filter[vendorNumber]", configuration.vendorNumber),
        ]
        if let version { query.append(("filter[version]", version)) }
        let base =
            configuration.baseURL.hasSuffix("/") ? String(configuration.baseURL.dropLast()) : configuration.baseURL
        let url = base + "/v1/salesReports" + AppStoreServerAPIClient.queryString(query)

        var renewedToken = false
        var attempt = 1
        var backoff = configuration.initialBackoff
        while true {
            let token = try await signer.token()
            let failure: AppStoreServerAPIError
            switch try await exchange(url, token: token) {
            case .answered(200, _, let body):
                guard body.count >= 2, body[0] == 0x1f, body[1] == 0x8b else {
                    throw AppStoreServerAPIError(
                        .unexpectedResponse, "salesReports answered 200 with a body that is not gzip", httpStatus: 200)
                }
                return .report(gzip: body)
            case .answered(404, _, let body):
                let detail = Self.errorDetail(body) ?? "HTTP 404"
                return detail.lowercased().contains("no sales")
                    ? .noSales(detail: detail) : .notYetAvailable(detail: detail)
            case .answered(401, _, _) where !renewedToken:
                // A token Apple will not take (a clock step, a revoked key): sign a fresh one, once.
                renewedToken = true
                await signer.discard()
                continue
            case .answered(429, let headers, let body):
                let retryAt = AppStoreServerAPIClient.retryAfter(headers, now: Date())
                throw AppStoreServerAPIError(
                    .rateLimited,
                    "App Store Connect's rate limit: \(Self.errorDetail(body) ?? "HTTP 429")"
                        + (headers.first(name: "X-Rate-Limit").map { " (X-Rate-Limit: \(Self.clean($0)))" } ?? ""),
                    httpStatus: 429, retryAt: retryAt)
            case .answered(let status, _, let body) where status >= 500:
                failure = AppStoreServerAPIError(
                    .apiError, "salesReports: \(Self.errorDetail(body) ?? "HTTP \(status)")", httpStatus: status)
            case .answered(let status, _, let body):
                throw AppStoreServerAPIError(
                    .apiError, "salesReports: \(Self.errorDetail(body) ?? "HTTP \(status)")", httpStatus: status)
            case .noAnswer(let error):
                failure = error
            }
            guard attempt < configuration.maxAttempts else { throw failure }
            logger.notice(
                "App Store Connect did not answer; retrying",
                metadata: ["attempt": "\(attempt)", "wait": "\(backoff)", "error": "\(failure)"])
            try await Task.sleep(for: backoff)
            backoff *= 2
            attempt += 1
        }
    }

    /// What one attempt got: Apple's answer, whatever its status, or why there was none.
    private enum Exchange {
        case answered(status: Int, headers: HTTPHeaders, body: [UInt8])
        case noAnswer(AppStoreServerAPIError)
    }

    /// One GET within the request timeout, the whole body read (up to the size bound).
    private func exchange(_ url: String, token: String) async throws -> Exchange {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/a-gzip, application/json")
        request.headers.add(name: "User-Agent", value: "ShopLedger")
        let timeout = configuration.requestTimeout
        let client = httpClient
        let sent = request
        do {
            let answer = try await withThrowingTaskGroup(of: Exchange?.self) { group in
                group.addTask {
                    let nanoseconds = Int64(timeout.seconds * 1e9)
                    let response = try await client.execute(
                        sent, deadline: .now() + .nanoseconds(nanoseconds), logger: nil)
                    let status = Int(response.status.code)
                    let limit = status == 200 ? Self.maxReportBytes : Self.maxErrorBytes
                    do {
                        let body = try await response.body.collect(upTo: limit)
                        return .answered(status: status, headers: response.headers, body: Array(body.readableBytesView))
                    } catch is NIOTooManyBytesError {
                        return .noAnswer(
                            AppStoreServerAPIError(
                                .unexpectedResponse, "salesReports answered \(status) with over \(limit) bytes",
                                httpStatus: status))
                    }
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let answer = first else {
                    return Exchange.noAnswer(AppStoreServerAPIError(.timeout, "salesReports did not answer in time"))
                }
                return answer
            }
            if case .noAnswer(let error) = answer, error.code == .unexpectedResponse { throw error }
            return answer
        } catch let error as AppStoreServerAPIError {
            throw error
        } catch let error as HTTPClientError
            where [.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout].contains(error)
        {
            return .noAnswer(AppStoreServerAPIError(.timeout, "salesReports did not answer in time"))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            try Task.checkCancellation()
            return .noAnswer(AppStoreServerAPIError(.transport, "salesReports: \(error)"))
        }
    }

    /// The first error's detail (or title, or code) of an App Store Connect `ErrorResponse`, cleaned.
    static func errorDetail(_ body: [UInt8]) -> String? {
        struct ErrorResponse: Decodable {
            struct Item: Decodable {
                var code: String?
                var title: String?
                var detail: String?
            }
            var errors: [Item]
        }
        guard let response = try? JSONDecoder().decode(ErrorResponse.self, from: Data(body)),
            let first = response.errors.first,
            let text = first.detail ?? first.title ?? first.code
        else { return nil }
        return clean(text)
    }

    /// `text` cut to 200 characters of printable ASCII, so nothing Apple (or a proxy) sends can garble a
    /// terminal or a log line.
    static func clean(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.prefix(200).map { (0x20..<0x7f).contains($0.value) ? $0 : "?" }))
    }

    static func isDate(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 10 && bytes[4] == 0x2d && bytes[7] == 0x2d
            && bytes.enumerated().allSatisfy { $0.offset == 4 || $0.offset == 7 || (0x30...0x39).contains($0.element) }
    }

    package static func isVersion(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 3 && (0x30...0x39).contains(bytes[0]) && bytes[1] == 0x5f
            && (0x30...0x39).contains(bytes[2])
    }
}
