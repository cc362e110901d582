import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ShopServer

/// Google's securetoken certificates served on loopback the way Google serves them: the JSON document,
/// `Cache-Control: public, max-age=N, must-revalidate, no-transform`, `Age`, `Date` and `Expires`.
/// The document, the max-age and the status can be changed while it runs; every GET is counted.
final class FakeGoogleCertificates: Sendable {
    struct State {
        var document: Data
        var maxAge: Int
        var status: HTTPResponse.Status = .ok
        var fetches = 0
    }

    let state: Mutex<State>

    init(_ document: Data, maxAge: Int) {
        state = Mutex(State(document: document, maxAge: maxAge))
    }

    var fetches: Int { state.withLock { $0.fetches } }
    func serve(_ document: Data) { state.withLock { $0.document = document } }
    func answer(_ status: HTTPResponse.Status) { state.withLock { $0.status = status } }

    func run<R: Sendable>(_ body: @escaping @Sendable (_ url: String) async throws -> R) async throws -> R {
        let router = Router()
        router.get("/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com") { _, _ -> Response in
            let (document, maxAge, status) = self.state.withLock { state in
                state.fetches += 1
                return (state.document, state.maxAge, state.status)
            }
            let now = Date()
            var headers: HTTPFields = [
                .contentType: "application/json; charset=UTF-8",
                .cacheControl: "public, max-age=\(maxAge), must-revalidate, no-transform",
                .date: HTTPFreshnessTests.imfFixdate(now),
                .expires: HTTPFreshnessTests.imfFixdate(now.addingTimeInterval(TimeInterval(maxAge))),
            ]
            headers[HTTPField.Name("Age")!] = "0"
            return Response(
                status: status, headers: headers,
                body: .init(byteBuffer: ByteBuffer(bytes: status == .ok ? document : Data("oops".utf8))))
        }
        var logger = Logger(label: "fake-google")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
        // On a thread of its own, with the test that calls it (docs/testing.md, "Two cooperative threads").
        return try await withTaskExecutorPreference(OwnThreadExecutor(label: "fake-google")) {
            try await app.test(.live) { client in
                try await body(
                    "http://127.0.0.1:\(client.port!)/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com")
            }
        }
    }
}

/// `--google-certs-url`: the server fetches Google's certificates itself, when their Cache-Control says
/// the last answer is stale, keeps its keys when a fetch fails, and refuses to start without any.
@Suite("Google's certificates fetched from their URL")
struct CertificateFetchTests {
    static let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The value of the metric line that starts with `series` (name and labels).
    static func value(_ series: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
            .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
    }

    static func withFetchingServer(
        _ google: FakeGoogleCertificates, minimumInterval: Duration, logs: LogRecorder,
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        try await google.run { url in
            var configuration = ServerTest.configuration()
            configuration.auth = AuthConfiguration(firebaseProjectId: authTestProjectId, googleCertificatesURL: url)
            configuration.auth = try await configuration.auth.fetchingGoogleCertificates(logger: logs.logger)
            configuration.googleCertificatesCheckInterval = minimumInterval
            try await withTestDatabase { db in
                let app = try buildApplication(configuration: configuration, client: db.client, logger: logs.logger)
                try await app.test(.router) { client in try await body(client) }
            }
        }
    }

    @Test("keys rotated at Google are fetched when the answer's max-age runs out; the retired key is refused")
    func refreshedWhenStale() async throws {
        let google = FakeGoogleCertificates(
            googleCertificateJSON(["kid-now": FirebaseAuthServerTests.key]), maxAge: 1)
        let logs = LogRecorder()
        try await Self.withFetchingServer(google, minimumInterval: .milliseconds(100), logs: logs) { client in
            let old = try CertificateRotationTests.token(FirebaseAuthServerTests.key, kid: "kid-now", uid: "fetch-user")
            let new = try CertificateRotationTests.token(
                CertificateRotationTests.nextKey, kid: "kid-next", uid: "fetch-user")
            #expect(try await client.sesac(.post, "/v1/user", token: old, form: signUpForm()).status == .ok)
            #expect(try await client.api(.get, "/api/v1/me", token: new).status == .unauthorized)

            google.serve(googleCertificateJSON(["kid-next": CertificateRotationTests.nextKey]))
            let picked = try await CertificateRotationTests.eventually(client, new, answers: .ok, within: .seconds(5))
            try #require(picked, "the new key is accepted once the old answer's max-age (1 s) ran out")
            #expect(try await client.api(.get, "/api/v1/me", token: old).status == .unauthorized)
            #expect(
                logs.messages.contains { $0.contains("fetched Google's certificates: new keys") }, "\(logs.messages)")
        }
    }

    @Test("no fetch before the answer's max-age runs out, however short the minimum interval; one when it does")
    func maxAgeHonoured() async throws {
        let google = FakeGoogleCertificates(
            googleCertificateJSON(["kid-now": FirebaseAuthServerTests.key]), maxAge: 3600)
        let logs = LogRecorder()
        try await google.run { url in
            let fetcher = GoogleCertificateFetcher(url: url)
            let fetched = try await fetcher.fetch()
            let store = GoogleCertificateStore(fetched: fetched, from: url)
            let clock = TestClock()
            let refresher = GoogleCertificateRefresher(
                store: store, fetcher: fetcher, minimumInterval: .milliseconds(10), logger: logs.logger, clock: clock)
            // Counted from the log, not the fake: another suite's SIGHUP (CertificateRotationTests) may
            // make this refresher fetch too, as it should.
            func refreshes() -> Int { logs.messages.count { $0.contains("reason=the last answer is no longer fresh") } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await refresher.run() }
                defer { group.cancelAll() }
                try #require(await clock.waitForSleepers(1), "the refresher waits for the answer to go stale")
                clock.advance(by: .seconds(3599))
                // `advance` wakes every sleeper whose deadline it passed, before it returns.
                #expect(clock.sleepers == 1, "still waiting a second before the hour's max-age runs out")
                #expect(refreshes() == 0)
                clock.advance(by: .seconds(1))
                #expect(clock.sleepers == 0, "woken when the max-age ran out")
                #expect(await logs.waitFor("reason=the last answer is no longer fresh", within: .seconds(30)))
                // Fresh for another hour: asleep again, with no second fetch.
                try #require(await clock.waitForSleepers(1))
                #expect(refreshes() == 1)
            }
        }
    }

    @Test("a failing fetch keeps the keys in use, says why, and is tried again")
    func failureKeepsKeys() async throws {
        let google = FakeGoogleCertificates(
            googleCertificateJSON(["kid-now": FirebaseAuthServerTests.key]), maxAge: 0)
        let logs = LogRecorder()
        try await Self.withFetchingServer(google, minimumInterval: .milliseconds(100), logs: logs) { client in
            let token = try CertificateRotationTests.token(
                FirebaseAuthServerTests.key, kid: "kid-now", uid: "kept-user")
            google.answer(.internalServerError)
            let failed = google.fetches
            // Two failures handled by the server: each is counted, then logged. (The fake's own count runs
            // ahead: a clean clone read /metrics after the fake had answered the second 500 and before the
            // server had counted it.)
            func handledFailures() -> Int { logs.messages.count { $0.contains("keeping the keys in use") } }
            let deadline = ContinuousClock.now + .seconds(30)
            while handledFailures() < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(handledFailures() >= 2 && google.fetches >= failed + 2, "tried again after a failure")
            #expect(
                try await client.api(.get, "/api/v1/me", token: token).status == .notFound, "signed in, unregistered")
            #expect(
                logs.messages.contains { $0.contains("keeping the keys in use") && $0.contains("HTTP 500") },
                "\(logs.messages.suffix(5))")

            let metrics = try await client.send(.get, "/metrics").body
            // The fetch at start, and maybe one before the 500s began.
            let fetched = Self.value(#"shop_google_certificates_fetches_total{result="ok"}"#, in: metrics)
            #expect((fetched ?? 0) >= 1, "\(metrics)")
            let failures = Self.value(#"shop_google_certificates_fetches_total{result="failed"}"#, in: metrics)
            #expect((failures ?? 0) >= 2, "each failed fetch is counted")
            let lastSuccess = try #require(
                Self.value("shop_google_certificates_last_success_timestamp_seconds", in: metrics))
            #expect(abs(lastSuccess - Date().timeIntervalSince1970) < 60, "the fetch at start")

            google.serve(Data("{\"kid-broken\": \"not a certificate\"}".utf8))
            google.answer(.ok)
            // Wait for the refresher to have read the broken document (a failure that is not a 500).
            func brokenDocumentRefused() -> Bool {
                logs.messages.contains { $0.contains("keeping the keys in use") && !$0.contains("HTTP 500") }
            }
            let brokenRead = ContinuousClock.now + .seconds(30)
            while !brokenDocumentRefused(), ContinuousClock.now < brokenRead {
                try await Task.sleep(for: .milliseconds(20))
            }
            try #require(brokenDocumentRefused(), "the broken document was fetched: \(logs.messages.suffix(5))")
            #expect(
                try await client.api(.get, "/api/v1/me", token: token).status == .notFound,
                "a document with no usable key keeps the keys in use too")
        }
    }

    @Test("a URL that gives no usable key set stops the start, with the reason")
    func startRefused() async throws {
        let google = FakeGoogleCertificates(Data("{}".utf8), maxAge: 60)
        try await google.run { url in
            let auth = AuthConfiguration(firebaseProjectId: authTestProjectId, googleCertificatesURL: url)
            await #expect {
                try await auth.fetchingGoogleCertificates(within: .seconds(3), logger: Self.quiet)
            } throws: { error in
                "\(error)".contains("holds no certificates")
            }
            #expect(google.fetches >= 2, "tried again within the deadline")
            google.answer(.notFound)
            await #expect {
                try await auth.fetchingGoogleCertificates(within: .milliseconds(100), logger: Self.quiet)
            } throws: { error in
                "\(error)".contains("answered HTTP 404")
            }
        }
        #expect(throws: AuthConfigurationError.self, "an unfetched URL builds no authenticator") {
            try Authenticator(
                configuration: AuthConfiguration(
                    firebaseProjectId: authTestProjectId, googleCertificatesURL: "https://example.com/certs"))
        }
        for url in ["http://example.com/certs", "ftp://127.0.0.1/certs", "not a url"] {
            let auth = AuthConfiguration(firebaseProjectId: authTestProjectId, googleCertificatesURL: url)
            await #expect(throws: AuthConfigurationError.self, "\(url) is refused before any fetch") {
                try await auth.fetchingGoogleCertificates(within: .milliseconds(100), logger: Self.quiet)
            }
        }
        #expect(throws: AuthConfigurationError.self, "a file and a URL together") {
            try Authenticator(
                configuration: AuthConfiguration(
                    firebaseProjectId: authTestProjectId, googleCertificatesPath: "/dev/null",
                    googleCertificatesURL: "https://example.com/certs"))
        }
    }
}

@Suite("Freshness of an HTTP answer from its headers")
struct HTTPFreshnessTests {
    static func imfFixdate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    @Test(
        "Cache-Control, Age, Expires and Date as RFC 9111 reads them",
        arguments: [
            // Google's own answer.
            ("public, max-age=19204, must-revalidate, no-transform", nil, nil, nil, 19204.0),
            ("public, max-age=19204, must-revalidate, no-transform", "204", nil, nil, 19000),
            ("MAX-AGE=60", nil, nil, nil, 60),
            ("max-age=\"60\"", nil, nil, nil, 60),
            ("max-age=60", "100", nil, nil, 0),
            ("no-cache, max-age=60", nil, nil, nil, 0),
            ("max-age=60, no-store", nil, nil, nil, 0),
            ("max-age=-5", nil, nil, nil, nil),
            ("max-age=abc", nil, nil, nil, nil),
            ("max-age=99999999999999999999", nil, nil, nil, 999_999_999),
            ("private", nil, "Sun, 06 Nov 1994 09:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", 3600),
            (nil, nil, "Sun, 06 Nov 1994 09:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", 3600),
            (nil, nil, "0", "Sun, 06 Nov 1994 08:49:37 GMT", 0),
            (nil, nil, "Sun, 06 Nov 1994 07:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", 0),
            (nil, nil, "Sun, 06 Nov 1994 09:49:37 GMT", nil, nil),
            (nil, nil, nil, nil, nil),
        ] as [(String?, String?, String?, String?, TimeInterval?)])
    func lifetime(
        cacheControl: String?, age: String?, expires: String?, date: String?, expected: TimeInterval?
    ) {
        #expect(HTTPFreshness.lifetime(cacheControl: cacheControl, age: age, expires: expires, date: date) == expected)
    }

    @Test("when the refresher fetches again: the whole lifetime, bounded; retries double to ten minutes")
    func schedule() {
        let minimum = Duration.seconds(60)
        #expect(
            GoogleCertificateRefresher.nextFetch(after: .seconds(19204), minimumInterval: minimum) == .seconds(19204))
        #expect(GoogleCertificateRefresher.nextFetch(after: .zero, minimumInterval: minimum) == minimum)
        #expect(GoogleCertificateRefresher.nextFetch(after: nil, minimumInterval: minimum) == .seconds(3600))
        #expect(
            GoogleCertificateRefresher.nextFetch(after: .seconds(999_999_999), minimumInterval: minimum)
                == .seconds(86400))
        let retries = (1...6).map { GoogleCertificateRefresher.retry(afterFailures: $0, minimumInterval: minimum) }
        #expect(retries == [.seconds(60), .seconds(120), .seconds(240), .seconds(480), .seconds(600), .seconds(600)])
    }
}
