import Crypto
import Foundation
import ShopServer
import SwiftASN1
import TestSupport
import Testing
import X509
import _CryptoExtras

/// A verifier over an in-memory key set, clock pinned at `now`.
func makeFirebaseVerifier(
    keys: [String: TestSigningKey] = ["kid-primary": .primary],
    clockSkew: TimeInterval = FirebaseTokenVerifier.defaultClockSkew,
    now: Date = authTestNow
) throws -> FirebaseTokenVerifier {
    let certificates = try GoogleCertificates(parsingJSON: googleCertificateJSON(keys))
    return try FirebaseTokenVerifier(
        projectId: authTestProjectId, certificates: GoogleCertificateStore(certificates), clockSkew: clockSkew,
        now: { now })
}

/// The error `body` throws, or `nil` when it succeeds. (Untyped closure: `#expect`'s expansion loses
/// the contextual typed-throws of a closure written inside it; the library's signatures are typed.)
func refusal<T>(_ body: () throws -> T) -> AuthError? {
    caught(AuthError.self, body)
}

/// The configuration error `body` throws, or `nil` when it succeeds.
func configurationRefusal<T>(_ body: () throws -> T) -> AuthConfigurationError? {
    caught(AuthConfigurationError.self, body)
}

private func caught<E: Error, T>(_ type: E.Type, _ body: () throws -> T) -> E? {
    do {
        _ = try body()
        return nil
    } catch let error as E {
        return error
    } catch {
        Issue.record("expected \(E.self), got \(error)")
        return nil
    }
}

/// A fresh directory under the system temp dir, removed by `body`'s end.
func withAuthTestDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("shopledger-auth-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}
