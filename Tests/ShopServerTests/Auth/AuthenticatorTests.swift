import Foundation
import HTTPTypes
import ShopServer
import TestSupport
import Testing

@Suite("Authenticator: both surfaces, admin, configuration")
struct AuthenticatorTests {
    static let adminSecret = "s3cret-admin-token-0123456789"

    private func headers(_ name: String, _ value: String) -> HTTPFields {
        HTTPFields([HTTPField(name: HTTPField.Name(name)!, value: value)])
    }

    /// An authenticator built from settings, over a certificate file in `directory`.
    private func configured(
        in directory: URL, developmentTokens: Bool = false, adminToken: String? = adminSecret
    ) throws -> Authenticator {
        let path = directory.appendingPathComponent("securetoken.json").path
        try googleCertificateJSON(["kid-primary": .primary]).write(to: URL(fileURLWithPath: path))
        let configuration = AuthConfiguration(
            firebaseProjectId: authTestProjectId, googleCertificatesPath: path,
            acceptsDevelopmentTokens: developmentTokens, adminToken: adminToken)
        return try Authenticator(configuration: configuration, now: { authTestNow })
    }

    @Test func bothSurfacesGiveTheUidOfAValidToken() throws {
        try withAuthTestDirectory { directory in
            let authenticator = try configured(in: directory)
            let token = try TestTokens().token()
            #expect(try authenticator.uid(fromSeSACHeaders: headers("idtoken", token)) == "user-123")
            #expect(try authenticator.uid(fromBearerHeaders: headers("authorization", "Bearer " + token)) == "user-123")
            // Each surface reads only its own header.
            #expect(
                refusal { try authenticator.uid(fromSeSACHeaders: headers("authorization", "Bearer " + token)) }?.code
                    == .missingToken)
            #expect(
                refusal { try authenticator.uid(fromBearerHeaders: headers("idtoken", token)) }?.code == .missingToken)
        }
    }

    @Test func developmentTokensAreOffByDefault() throws {
        #expect(AuthConfiguration().acceptsDevelopmentTokens == false)
        try withAuthTestDirectory { directory in
            let authenticator = try configured(in: directory)
            #expect(
                refusal { try authenticator.uid(fromSeSACHeaders: headers("idtoken", "dev:alice")) }?.code
                    == .malformedToken)
            #expect(
                refusal { try authenticator.uid(fromBearerHeaders: headers("authorization", "Bearer dev:alice")) }?.code
                    == .malformedToken)
        }
    }

    @Test func developmentTokensWorkOnBothSurfacesWhenConfigured() throws {
        try withAuthTestDirectory { directory in
            let authenticator = try configured(in: directory, developmentTokens: true)
            #expect(try authenticator.uid(fromSeSACHeaders: headers("idtoken", "dev:alice")) == "alice")
            #expect(try authenticator.uid(fromBearerHeaders: headers("authorization", "Bearer dev:bob")) == "bob")
            let token = try TestTokens().token()
            #expect(try authenticator.uid(fromSeSACHeaders: headers("idtoken", token)) == "user-123")
        }
        let developmentOnly = try Authenticator(configuration: AuthConfiguration(acceptsDevelopmentTokens: true))
        #expect(try developmentOnly.uid(fromSeSACHeaders: headers("idtoken", "dev:carol")) == "carol")
        #expect(developmentOnly.certificateStore == nil)
        #expect(try developmentOnly.reloadCertificates() == nil)
    }

    @Test func theAdminTokenOpensAdminEndpoints() throws {
        try withAuthTestDirectory { directory in
            let authenticator = try configured(in: directory)
            try authenticator.requireAdmin(headers("authorization", "Bearer " + Self.adminSecret))
            try authenticator.requireAdmin(headers("authorization", "bearer  " + Self.adminSecret))
        }
    }

    @Test func anythingButTheAdminTokenIsRefused() throws {
        try withAuthTestDirectory { directory in
            let authenticator = try configured(in: directory)
            let user = try TestTokens().token()
            for value in [
                "Bearer wrong-admin-token-0123456789",
                "Bearer " + Self.adminSecret.dropLast(),
                "Bearer " + Self.adminSecret + "x",
                "Bearer " + Self.adminSecret.uppercased(),
                "Bearer " + user,  // a valid user token is not admin
                "Bearer dev:admin",
                "Basic " + Self.adminSecret,
                Self.adminSecret,
                "",
            ] {
                let error = refusal { try authenticator.requireAdmin(headers("authorization", value)) }
                #expect(error?.code == .adminRequired, "\(value.prefix(12))")
                #expect(error?.description.contains(Self.adminSecret) == false)
            }
            #expect(refusal { try authenticator.requireAdmin(HTTPFields()) }?.code == .adminRequired)
            #expect(
                refusal { try authenticator.requireAdmin(headers("idtoken", Self.adminSecret)) }?.code == .adminRequired
            )
        }
    }

    @Test func withoutAConfiguredAdminTokenAdminIsAlwaysRefused() throws {
        try withAuthTestDirectory { directory in
            let authenticator = try configured(in: directory, adminToken: nil)
            for value in ["Bearer " + Self.adminSecret, "Bearer ", "Bearer null", ""] {
                let error = refusal { try authenticator.requireAdmin(headers("authorization", value)) }
                #expect(error?.code == .adminRequired)
                #expect(error?.message == "admin access is not configured on this server")
            }
        }
    }

    @Test func adminTokenComparison() throws {
        let admin = try AdminToken(Self.adminSecret)
        #expect(admin.matches(Self.adminSecret))
        #expect(!admin.matches(""))
        #expect(!admin.matches(String(Self.adminSecret.dropLast())))
        #expect(!admin.matches(Self.adminSecret + Self.adminSecret))
        #expect(!"\(admin)".contains(Self.adminSecret))
        #expect(configurationRefusal { try AdminToken("short") }?.description.contains("at least 16 bytes") == true)
        #expect(configurationRefusal { try AdminToken("has a space in the middle") } != nil)
        #expect(configurationRefusal { try AdminToken(String(repeating: "x", count: 16)) } == nil)
    }

    @Test func settingsThatCannotWorkAreRefused() throws {
        #expect(
            configurationRefusal { try Authenticator(configuration: AuthConfiguration()) }?.description.contains(
                "no way to sign in") == true)
        #expect(
            configurationRefusal { try Authenticator(configuration: AuthConfiguration(firebaseProjectId: "p")) } != nil)
        #expect(
            configurationRefusal {
                try Authenticator(configuration: AuthConfiguration(googleCertificatesPath: "/tmp/x.json"))
            } != nil)
        #expect(
            configurationRefusal {
                try Authenticator(configuration: AuthConfiguration(acceptsDevelopmentTokens: true, adminToken: "short"))
            } != nil)
        try withAuthTestDirectory { directory in
            let path = directory.appendingPathComponent("empty.json").path
            try Data("{}".utf8).write(to: URL(fileURLWithPath: path))
            let error = configurationRefusal {
                try Authenticator(
                    configuration: AuthConfiguration(firebaseProjectId: authTestProjectId, googleCertificatesPath: path)
                )
            }
            #expect(error?.description.contains("holds no certificates") == true)
        }
    }

    @Test func reloadCertificatesPicksUpARotatedFile() throws {
        try withAuthTestDirectory { directory in
            let authenticator = try configured(in: directory)
            let rotatedToken = try TestTokens(signer: .rotated, kid: "kid-rotated").token()
            #expect(
                refusal { try authenticator.uid(fromSeSACHeaders: headers("idtoken", rotatedToken)) }?.code
                    == .unknownKey)
            try googleCertificateJSON(["kid-primary": .primary, "kid-rotated": .rotated])
                .write(to: directory.appendingPathComponent("securetoken.json"), options: .atomic)
            #expect(try authenticator.reloadCertificates()?.keyIDs == ["kid-primary", "kid-rotated"])
            #expect(try authenticator.uid(fromSeSACHeaders: headers("idtoken", rotatedToken)) == "user-123")
        }
    }
}
