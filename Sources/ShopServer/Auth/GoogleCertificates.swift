import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// The RSA keys Firebase signs ID tokens with, by key id, parsed once from Google's certificate file.
///
/// The file is the JSON object Google serves at
/// `https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com`:
/// `{"<kid>": "-----BEGIN CERTIFICATE-----\n...", ...}`, from a file an operator's job keeps fresh or
/// fetched by ``GoogleCertificateFetcher``; this type only parses it. Certificates whose key is not RSA are skipped; a certificate that does not parse refuses the whole
/// file (a half-written file must not silently drop keys); a file with no usable key is refused.
public struct GoogleCertificates: Sendable {
    /// One usable key: the parsed RSA key and its certificate's validity period.
    public struct SigningKey: Sendable {
        public let keyID: String
        public let publicKey: _RSA.Signing.PublicKey
        public let notValidBefore: Date
        public let notValidAfter: Date

        /// Whether the certificate is valid at `date`, allowing `skew` seconds either side.
        public func isValid(at date: Date, skew: TimeInterval) -> Bool {
            notValidBefore.addingTimeInterval(-skew) <= date && date <= notValidAfter.addingTimeInterval(skew)
        }
    }

    /// Google's file is about 3 KiB; anything near this is not that file.
    public static let maxFileBytes = 1024 * 1024

    /// The usable keys by `kid`.
    public let keys: [String: SigningKey]
    /// Key ids whose certificate parsed but whose key is not RSA (ignored).
    public let skippedKeyIDs: [String]

    /// The loaded key ids, sorted (for logs).
    public var keyIDs: [String] { keys.keys.sorted() }

    public subscript(keyID: String) -> SigningKey? { keys[keyID] }

    /// Reads and parses the file at `path`.
    public static func load(contentsOfFile path: String) throws(AuthConfigurationError) -> GoogleCertificates {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw AuthConfigurationError(
                "cannot read the Google certificate file \(path): \(error.localizedDescription)")
        }
        do {
            return try GoogleCertificates(parsingJSON: data)
        } catch {
            throw AuthConfigurationError("Google certificate file \(path): \(error.description)")
        }
    }

    /// Parses the JSON text of Google's certificate file.
    public init(parsingJSON data: Data) throws(AuthConfigurationError) {
        guard data.count <= Self.maxFileBytes else {
            throw AuthConfigurationError("the certificate file is \(data.count) bytes, over \(Self.maxFileBytes)")
        }
        let entries: [String: String]
        do {
            entries = try JSONDecoder().decode([String: String].self, from: data)
        } catch {
            throw AuthConfigurationError(
                "not a JSON object of key id → PEM certificate (Google's securetoken x509 format)")
        }
        var keys: [String: SigningKey] = [:]
        var skipped: [String] = []
        for (keyID, pem) in entries.sorted(by: { $0.key < $1.key }) {
            guard !keyID.isEmpty else { throw AuthConfigurationError("a certificate has an empty key id") }
            let certificate: Certificate
            do {
                certificate = try Certificate(pemEncoded: pem)
            } catch {
                throw AuthConfigurationError("the certificate for key id \"\(keyID)\" is not a PEM X.509 certificate")
            }
            guard let publicKey = _RSA.Signing.PublicKey(certificate.publicKey) else {
                skipped.append(keyID)
                continue
            }
            keys[keyID] = SigningKey(
                keyID: keyID,
                publicKey: publicKey,
                notValidBefore: certificate.notValidBefore,
                notValidAfter: certificate.notValidAfter
            )
        }
        guard !keys.isEmpty else {
            throw AuthConfigurationError(
                entries.isEmpty
                    ? "the file holds no certificates"
                    : "none of the \(entries.count) certificates has an RSA key")
        }
        self.keys = keys
        self.skippedKeyIDs = skipped
    }
}
