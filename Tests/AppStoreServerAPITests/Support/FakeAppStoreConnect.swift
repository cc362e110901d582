import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import TestSupport

/// A fake of the App Store Connect API's Download Sales and Trends Reports (`GET /v1/salesReports`) on
/// 127.0.0.1, answering as Apple documents it: 200 `application/a-gzip` with the report, or an
/// `ErrorResponse` (`{"errors": [{"id", "status", "code", "title", "detail"}]}`) with 400, 401, 404
/// (a day without sales, or a report not made yet), 410 or 429.
///
/// Every request's token is checked as Apple would: ES256 with the team key, `kid`, `typ` JWT, `iss` the
/// issuer id, `aud` appstoreconnect-v1, no `bid`, and at most 20 minutes between `iat` and `exp`. The
/// query must name the SALES / SUMMARY / DAILY report of the fake's vendor with a `YYYY-MM-DD` date.
final class FakeAppStoreConnect: Sendable {
    enum Fault: Sendable {
        /// Answer this status with an `ErrorResponse` whose detail is `detail`.
        case status(Int, detail: String)
        /// 429 as Apple's hourly limit answers it.
        case rateLimited
        /// Wait this long before answering normally.
        case hang(Duration)
        /// 200 with a body that is not gzip.
        case notGzip
    }

    struct Request: Sendable {
        var query: [String: String]
        var tokenProblem: String?
        var claims: [String: String]
    }

    let apiKey = P256.Signing.PrivateKey()
    let keyId = "2X9R4HXF34"
    let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    let vendorNumber = "85012345"

    private struct State {
        var reports: [String: [UInt8]] = [:]
        var noSales: Set<String> = []
        var faults: [Fault] = []
        var requests: [Request] = []
    }
    private let state = Mutex(State())

    /// Serves `gzip` as the report of `date`.
    func add(report gzip: [UInt8], for date: String) { state.withLock { $0.reports[date] = gzip } }
    /// Answers `date` as a day without sales.
    func noSales(on date: String) { state.withLock { _ = $0.noSales.insert(date) } }
    /// The next requests are answered with these faults, one each, in order.
    func script(_ faults: Fault...) { state.withLock { $0.faults += faults } }
    var requests: [Request] { state.withLock { $0.requests } }

    /// Runs the fake on a free loopback port for the duration of `body`, which gets its base URL.
    func run<R: Sendable>(_ body: @escaping @Sendable (_ baseURL: String) async throws -> R) async throws -> R {
        let router = Router()
        router.get("/v1/salesReports") { request, _ in try await self.answer(request) }
        var logger = Logger(label: "fake-app-store-connect")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
        // On a thread of its own, with the test that calls it: see `OwnThreadExecutor`.
        return try await withTaskExecutorPreference(OwnThreadExecutor(label: "fake-app-store-connect")) {
            try await app.test(.live) { client in try await body("http://127.0.0.1:\(client.port!)") }
        }
    }

    private func answer(_ request: Hummingbird.Request) async throws -> Response {
        let authorization = request.headers[.authorization] ?? ""
        let (problem, claims) = checkToken(authorization)
        var query: [String: String] = [:]
        // Clients send the brackets of `filter[…]` bare or percent-encoded (RFC 3986 reserves them); both
        // name the same parameter.
        for (name, value) in request.uri.queryParameters {
            query[String(name).removingPercentEncoding ?? String(name)] = String(value)
        }
        let fault: Fault? = state.withLock { state in
            state.requests.append(Request(query: query, tokenProblem: problem, claims: claims))
            return state.faults.isEmpty ? nil : state.faults.removeFirst()
        }
        if let problem {
            return Self.error(
                401, code: "NOT_AUTHORIZED", title: "Authentication credentials are missing or invalid.",
                detail: problem)
        }
        switch fault {
        case .status(let status, let detail)?:
            return Self.error(status, code: status == 404 ? "NOT_FOUND" : "ERROR", title: "scripted", detail: detail)
        case .rateLimited?:
            var response = Self.error(
                429, code: "RATE_LIMIT_EXCEEDED", title: "The request rate limit has been reached.",
                detail:
                    "We've received too many requests for this API. Please wait and try again or slow down your request rate."
            )
            response.headers[HTTPField.Name("X-Rate-Limit")!] = "user-hour-lim:3600;user-hour-rem:0;"
            return response
        case .hang(let duration)?:
            try? await Task.sleep(for: duration)
        case .notGzip?:
            return Response(
                status: .ok, headers: [.contentType: "application/a-gzip"],
                body: .init(byteBuffer: ByteBuffer(string: "Provider\tSKU\n")))
        case nil:
            break
        }
        let expected = [
            "filter[frequency]": "DAILY", "filter[reportSubType]": "SUMMARY", "filter[reportType]": "SALES",
            "filter[vendorNumber]": vendorNumber,
        ]
        for (name, value) in expected where query[name] != value {
            return Self.error(
                400, code: "PARAMETER_ERROR.INVALID", title: "A parameter has an invalid value",
                detail: "'\(query[name] ?? "")' is not a valid value for the parameter '\(name)'")
        }
        guard let date = query["filter[reportDate]"], date.count == 10 else {
            return Self.error(
                400, code: "PARAMETER_ERROR.INVALID", title: "A parameter has an invalid value",
                detail: "Invalid date format for DAILY frequency")
        }
        let (report, noSales) = state.withLock { ($0.reports[date], $0.noSales.contains(date)) }
        if let report {
            return Response(
                status: .ok, headers: [.contentType: "application/a-gzip"],
                body: .init(byteBuffer: ByteBuffer(bytes: report)))
        }
        if noSales {
            return Self.error(
                404, code: "NOT_FOUND", title: "The specified resource does not exist",
                detail: "There were no sales for the date specified.")
        }
        return Self.error(
            404, code: "NOT_FOUND", title: "The specified resource does not exist",
            detail: "The report you requested is not available yet. Try again later.")
    }

    /// Why `authorization` is not an App Store Connect token Apple would take (nil when it is), and its
    /// claims as text.
    func checkToken(_ authorization: String) -> (String?, [String: String]) {
        guard authorization.hasPrefix("Bearer ") else { return ("no bearer token", [:]) }
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = FakeAppStore.base64URLDecode(parts[0]),
            let claimsData = FakeAppStore.base64URLDecode(parts[1]),
            let signatureData = FakeAppStore.base64URLDecode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { return ("not a JWT", [:]) }
        let text = claims.mapValues { "\($0)" }
        guard header["alg"] as? String == "ES256" else { return ("alg is not ES256", text) }
        guard header["kid"] as? String == keyId else { return ("wrong kid", text) }
        guard header["typ"] as? String == "JWT" else { return ("typ is not JWT", text) }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            apiKey.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return ("signature does not verify with the key", text) }
        guard claims["iss"] as? String == issuerId else { return ("wrong iss", text) }
        guard claims["aud"] as? String == "appstoreconnect-v1" else { return ("wrong aud", text) }
        guard claims["bid"] == nil else { return ("an App Store Connect token carries no bid", text) }
        guard let iat = FakeAppStore.int64(claims["iat"]), let exp = FakeAppStore.int64(claims["exp"])
        else { return ("iat or exp missing", text) }
        let now = Int64(Date().timeIntervalSince1970)
        guard iat <= now + 60, iat >= now - 1200 else { return ("iat is not now", text) }
        guard exp > now, exp > iat, exp - iat <= 1200 else {
            return ("exp expired or more than 20 minutes after iat", text)
        }
        return (nil, text)
    }

    static func error(_ status: Int, code: String, title: String, detail: String) -> Response {
        let object: [String: Any] = [
            "errors": [
                ["id": UUID().uuidString, "status": "\(status)", "code": code, "title": title, "detail": detail]
            ]
        ]
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
