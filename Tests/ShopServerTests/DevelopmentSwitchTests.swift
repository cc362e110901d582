import Foundation
import Receipts
import Testing

@testable import ShopServer

/// Development tokens (`dev:<uid>` impersonates anyone) and stub receipts (free purchases) must not
/// reach a public address by accident, and a stub secret must be long enough not to be guessed.
@Suite("Development switches and the stub secret at start")
struct DevelopmentSwitchTests {
    static let longSecret = String(repeating: "s", count: 32)

    static func configuration(
        host: String, devAuth: Bool = false, stubs: Bool = false, secret: String? = nil
    ) -> ServerConfiguration {
        ServerConfiguration(
            host: host, auth: AuthConfiguration(acceptsDevelopmentTokens: devAuth),
            receipts: VerifierConfiguration(
                bundleId: ServerConfiguration.defaultBundleId, acceptsStubReceipts: stubs, stubSecret: secret))
    }

    static func refusal(_ configuration: ServerConfiguration) -> String? {
        do {
            try configuration.validate()
            return nil
        } catch {
            return error.description
        }
    }

    @Test(
        "development tokens or stub receipts on a public address are refused at start",
        arguments: ["0.0.0.0", "::", "192.168.1.20", "shop.example.com"])
    func refusedOnPublicAddress(host: String) {
        for (devAuth, stubs) in [(true, false), (false, true), (true, true)] {
            let message = Self.refusal(
                Self.configuration(host: host, devAuth: devAuth, stubs: stubs, secret: Self.longSecret))
            #expect(
                message?.contains("--allow-development-on-public-address") == true,
                "\(host) dev=\(devAuth) stubs=\(stubs): \(message ?? "accepted")")
        }
        #expect(Self.refusal(Self.configuration(host: host)) == nil, "no development switch: \(host) is fine")
    }

    @Test("on loopback they are accepted", arguments: ["127.0.0.1", "127.0.0.53", "::1", "localhost"])
    func acceptedOnLoopback(host: String) {
        #expect(
            Self.refusal(Self.configuration(host: host, devAuth: true, stubs: true, secret: Self.longSecret)) == nil)
    }

    @Test("a stub secret shorter than 32 bytes is refused")
    func shortStubSecret() {
        let short = Self.refusal(
            Self.configuration(host: "127.0.0.1", stubs: true, secret: String(repeating: "s", count: 31)))
        #expect(short?.contains("32") == true, "\(short ?? "accepted")")
        #expect(Self.refusal(Self.configuration(host: "127.0.0.1", stubs: true, secret: Self.longSecret)) == nil)
    }
}
