import ArgumentParser
import Foundation
import GooglePlay
import Logging
import ShopServer
import TestSupport
import Testing

@testable import shopledger

/// `serve`'s Google Play flags as `ServeCommand` builds its settings from them, against the fake Google's
/// certificate endpoint (in process: the parser and `GooglePlayOptions.settings(logger:)` are what the
/// binary runs).
@Suite("serve's Google Play settings")
struct GooglePlaySettingsTests {
    static var quietLogger: Logger {
        var logger = Logger(label: "shopledger.cli.tests")
        logger.logLevel = .critical
        return logger
    }

    static func settings(_ arguments: [String]) async throws -> GooglePlaySettings? {
        try await ServeCommand.parse(arguments).server.googlePlay.settings(logger: quietLogger)
    }

    @Test(
        "the package, key file, budget, sync and push flags make the settings; push certificates are fetched at start")
    func fromFlags() async throws {
        let fake = FakeGooglePlay()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("google-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await fake.run { base in
            let keyPath = folder.appendingPathComponent("key.json").path
            try fake.keyFileJSON(tokenURI: base + "/token").write(to: URL(fileURLWithPath: keyPath))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
            let api = ["--google-play-package", fake.packageName, "--google-service-account-file", keyPath]
            let push = [
                "--google-play-push-audience", "https://shop.example.com/push", "--google-play-push-account",
                fake.pushServiceAccount, "--google-play-push-certs-url", base + "/oauth2/v1/certs",
            ]
            let settings = try #require(
                try await Self.settings(
                    api + push + ["--google-play-sync-interval", "300", "--google-play-verify-budget", "4"]))
            #expect(settings.api.packageName == fake.packageName)
            #expect(settings.api.tokenURL == base + "/token")
            #expect(settings.api.credential.clientEmail == fake.serviceAccountEmail)
            #expect(settings.syncInterval == .seconds(300) && settings.verificationBudget == .seconds(4))
            #expect(settings.push?.audience == "https://shop.example.com/push")
            #expect(settings.push?.certificates.certificates[fake.pushKeyId] != nil)
            #expect(settings.push?.certificates.url == base + "/oauth2/v1/certs")

            // Not configured at all: nil, and nothing else changes.
            #expect(try await Self.settings([]) == nil)
            // Half a configuration is refused, naming what is missing.
            await #expect(throws: ValidationError.self) {
                try await Self.settings(["--google-play-package", "com.a.b"])
            }
            await #expect(throws: ValidationError.self) {
                try await Self.settings(api + ["--google-play-push-audience", "https://shop.example.com/push"])
            }
            // A key file others may read is refused, as the App Store key is.
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyPath)
            await #expect(throws: (any Error).self) { try await Self.settings(api) }
        }
    }
}
