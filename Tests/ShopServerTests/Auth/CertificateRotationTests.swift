import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ShopServer

/// Google rotates its securetoken keys every few days; an operator's job rewrites the file. The
/// running server must pick the new file up (on a timer, and at once on SIGHUP) and keep its keys
/// when the new file is broken, saying why.
@Suite("Google certificate file rotated under a running server")
struct CertificateRotationTests {
    static let nextKey = try! TestSigningKey(
        commonName: "next", notValidBefore: Date().addingTimeInterval(-86_400),
        notValidAfter: Date().addingTimeInterval(86_400))

    static func token(_ key: TestSigningKey, kid: String, uid: String) throws -> String {
        try TestTokens(signer: key, kid: kid, claims: TestTokens.defaultClaims(uid: uid, now: Date())).token()
    }

    /// Replaces the file the way a rotation job should: a new file renamed over the old one.
    static func rotate(_ file: URL, to contents: Data) throws {
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".next-\(UUID().uuidString)")
        try contents.write(to: temporary)
        guard rename(temporary.path, file.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    /// Asks `GET /api/v1/me` with `token` until it answers `status`, for at most `within`.
    static func eventually(
        _ client: any TestClientProtocol, _ token: String, answers status: HTTPResponse.Status, within: Duration
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            if try await client.api(.get, "/api/v1/me", token: token).status == status { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    static func withRotatingServer(
        checkInterval: Duration, logs: LogRecorder,
        _ body: @escaping @Sendable (any TestClientProtocol, URL) async throws -> Void
    ) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "google-certs-\(UUID().uuidString).json")
        try googleCertificateJSON(["kid-now": FirebaseAuthServerTests.key]).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var configuration = ServerTest.configuration()
        configuration.auth = AuthConfiguration(firebaseProjectId: authTestProjectId, googleCertificatesPath: file.path)
        configuration.googleCertificatesCheckInterval = checkInterval
        try await withTestDatabase { db in
            let app = try buildApplication(configuration: configuration, client: db.client, logger: logs.logger)
            try await app.test(.router) { client in try await body(client, file) }
        }
    }

    @Test("a rotated file is picked up by the periodic check; a broken one keeps the keys in use and the log says why")
    func periodicCheck() async throws {
        let logs = LogRecorder()
        try await Self.withRotatingServer(checkInterval: .milliseconds(100), logs: logs) { client, file in
            let old = try Self.token(FirebaseAuthServerTests.key, kid: "kid-now", uid: "rotating-user")
            let new = try Self.token(Self.nextKey, kid: "kid-next", uid: "rotating-user")
            #expect(try await client.sesac(.post, "/v1/user", token: old, form: signUpForm()).status == .ok)
            #expect(try await client.api(.get, "/api/v1/me", token: new).status == .unauthorized)

            try Self.rotate(file, to: googleCertificateJSON(["kid-next": Self.nextKey]))
            let picked = try await Self.eventually(client, new, answers: .ok, within: .seconds(5))
            try #require(picked, "the new key is accepted after the rotation")
            #expect(
                try await client.api(.get, "/api/v1/me", token: old).status == .unauthorized, "the retired key is not")

            try Self.rotate(file, to: Data("{\"kid-broken\": \"not a certificate\"}".utf8))
            // The watcher has read the broken file once it says so.
            try #require(
                await logs.waitFor("keeping the keys in use", within: .seconds(30)), "the broken file was read")
            #expect(
                try await client.api(.get, "/api/v1/me", token: new).status == .ok,
                "a broken file keeps the keys in use")
            #expect(
                logs.messages.contains { $0.contains("keeping the keys in use") }, "the log says why: \(logs.messages)")
        }
    }

    @Test("SIGHUP re-reads the file at once")
    func sighup() async throws {
        let logs = LogRecorder()
        try await Self.withRotatingServer(checkInterval: .seconds(3600), logs: logs) { client, file in
            let new = try Self.token(Self.nextKey, kid: "kid-next", uid: "hup-user")
            try Self.rotate(
                file, to: googleCertificateJSON(["kid-now": FirebaseAuthServerTests.key, "kid-next": Self.nextKey]))
            try await Task.sleep(for: .milliseconds(300))
            #expect(
                try await client.api(.get, "/api/v1/me", token: new).status == .unauthorized,
                "not before SIGHUP (hourly check)")
            // The watcher traps SIGHUP while it runs (its handler is installed once it has started).
            try #require(await logs.waitFor("watching the Google certificate file", within: .seconds(5)))
            kill(getpid(), SIGHUP)
            #expect(
                try await Self.eventually(client, new, answers: .notFound, within: .seconds(5)),
                "signed in (not registered) after SIGHUP")
        }
    }
}
