import Foundation
import Receipts
import ShopServer

/// The fixed fuzz PKI the harness trusts, committed under `Fuzz/pki/` (made once by `fuzz-seeds`, like the
/// seeds it signed): the App Store root (ES256 chains), the classic receipt root (RSA) and a Google-style
/// certificate file for Firebase ID tokens. Everything is valid from 2020-01-01 to 2045-01-01, and the
/// seeds are signed at dates inside that span, so that they stay valid whatever today's date.
public struct FuzzPKI: Sendable {
    public static let bundleId = "com.memolease.sesac1"
    public static let firebaseProjectId = "sesac-shop-fuzz"
    /// The secret of the verifier that wants signed stubs (the other one accepts unsigned stubs).
    public static let stubSecret = "shopledger-fuzz-stub-secret"
    /// The Firebase verifier's clock, pinned: 2030-01-01T00:00:00Z. Seed tokens are issued then.
    public static let firebaseNow = Date(timeIntervalSince1970: 1_893_456_000)
    /// The receipt verifiers' clock, pinned: 2030-06-07T00:00:00Z, half a day after the seeds were signed,
    /// so that their dates lie in the window of dates a payload may claim (`SignedDateWindow`).
    public static let verifierNow = Date(timeIntervalSince1970: 1_907_020_800)

    public static let appStoreRootFile = "app-store-root.der"
    public static let receiptRootFile = "receipt-root.der"
    public static let googleCertificatesFile = "google-certificates.json"

    public let appStoreRoot: RootCertificate
    public let receiptRoot: RootCertificate
    public let googleCertificates: GoogleCertificates

    public struct LoadError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Reads the three files from `directory`.
    public init(directory: URL) throws(LoadError) {
        func read(_ name: String) throws(LoadError) -> [UInt8] {
            let url = directory.appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw LoadError(description: "cannot read \(url.path) (the fuzz PKI; see docs/testing.md, Fuzzing)")
            }
            return Array(data)
        }
        do {
            appStoreRoot = try RootCertificate(derEncoded: try read(Self.appStoreRootFile))
            receiptRoot = try RootCertificate(derEncoded: try read(Self.receiptRootFile))
            googleCertificates = try GoogleCertificates(parsingJSON: Data(try read(Self.googleCertificatesFile)))
        } catch let error as LoadError {
            throw error
        } catch {
            throw LoadError(description: "the fuzz PKI in \(directory.path) does not load: \(error)")
        }
    }

    /// The fuzzing files' root, `Fuzz/`: `SHOPLEDGER_FUZZ_DIR`, else `Fuzz` in the current directory, else
    /// the one beside these sources.
    public static var fuzzDirectory: URL {
        if let configured = ProcessInfo.processInfo.environment["SHOPLEDGER_FUZZ_DIR"], !configured.isEmpty {
            return URL(fileURLWithPath: configured, isDirectory: true)
        }
        let here = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Fuzz")
        if FileManager.default.fileExists(atPath: here.appendingPathComponent("pki").path) { return here }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz", isDirectory: true)
    }

    /// The PKI in ``fuzzDirectory``.
    public static func load() throws(LoadError) -> FuzzPKI {
        try FuzzPKI(directory: fuzzDirectory.appendingPathComponent("pki", isDirectory: true))
    }
}
