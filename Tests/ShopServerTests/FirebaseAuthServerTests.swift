import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import ShopServer

@Suite("Firebase ID tokens on both surfaces")
struct FirebaseAuthServerTests {
    /// A Google-like signing key valid around the real clock (the server checks tokens against `Date()`).
    static let key = try! TestSigningKey(
        commonName: "now", notValidBefore: Date().addingTimeInterval(-86_400),
        notValidAfter: Date().addingTimeInterval(86_400))

    static func token(uid: String, _ changes: [String: Any?] = [:]) throws -> String {
        try TestTokens(signer: key, kid: "kid-now", claims: TestTokens.defaultClaims(uid: uid, now: Date())).with(
            changes
        ).token()
    }

    @Test("a valid token signs in as its uid; expired, forged, wrong-project and dev tokens are 401 and write nothing")
    func tokens() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "google-certs-\(UUID().uuidString).json")
        try googleCertificateJSON(["kid-now": Self.key]).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withShopServer(configure: { configuration in
            configuration.auth = AuthConfiguration(
                firebaseProjectId: authTestProjectId, googleCertificatesPath: file.path)
        }) { client, db in
            let valid = try Self.token(uid: "firebase-user")
            #expect(try await client.sesac(.post, "/v1/user", token: valid, form: signUpForm()).status == .ok)
            #expect(try await client.api(.get, "/api/v1/me", token: valid).json["uid"] as? String == "firebase-user")

            let before = try await ledgerRowCounts(db.client)
            let now = Int(Date().timeIntervalSince1970)
            let refused = [
                try Self.token(uid: "late", ["exp": now - 3600, "iat": now - 7200, "auth_time": now - 7200]),
                try Self.token(uid: "elsewhere", ["aud": "another-project"]),
                try TestTokens(
                    signer: .other, kid: "kid-now", claims: TestTokens.defaultClaims(uid: "forger", now: Date())
                ).token(),
                TestTokens(
                    header: ["alg": "none", "kid": "kid-now"],
                    claims: TestTokens.defaultClaims(uid: "none", now: Date())
                )
                .token(signatureSegment: ""),
                "dev:firebase-user",
            ]
            for token in refused {
                #expect(
                    try await client.sesac(.post, "/v1/user", token: token, form: signUpForm()).status == .unauthorized)
                let answer = try await client.api(.get, "/api/v1/me", token: token)
                #expect(answer.status == .unauthorized && answer.headers[.wwwAuthenticate] == "Bearer")
            }
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }
}
