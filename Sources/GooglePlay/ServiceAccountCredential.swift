import Foundation
import _CryptoExtras

/// A Google Cloud service account's JSON key file: who signs (`client_email`), with which key
/// (`private_key`, an RSA PKCS#8 PEM; `private_key_id` as the JWT's `kid`), and where its assertions are
/// exchanged for access tokens (`token_uri`). Its `description` never shows the key.
public struct ServiceAccountCredential: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let clientEmail: String
    public let privateKeyId: String?
    public let tokenURI: String
    let key: _RSA.Signing.PrivateKey

    /// Google's token endpoint, when the key file names none.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    public init(
        clientEmail: String, key: _RSA.Signing.PrivateKey, privateKeyId: String? = nil,
        tokenURI: String = ServiceAccountCredential.googleTokenURI
    ) {
        self.clientEmail = clientEmail
        self.key = key
        self.privateKeyId = privateKeyId
        self.tokenURI = tokenURI
    }

    private struct KeyFile: Decodable {
        let type: String?
        let clientEmail: String?
        let privateKey: String?
        let privateKeyId: String?
        let tokenURI: String?

        enum CodingKeys: String, CodingKey {
            case type
            case clientEmail = "client_email"
            case privateKey = "private_key"
            case privateKeyId = "private_key_id"
            case tokenURI = "token_uri"
        }
    }

    /// The key file's JSON (as Google Cloud's console downloads it).
    public init(json: Data) throws(GooglePlayError) {
        let file: KeyFile
        do {
            file = try JSONDecoder().decode(KeyFile.self, from: json)
        } catch {
            throw GooglePlayError(.configuration, "the service account key file is not JSON of Google's shape")
        }
        if let type = file.type, type != "service_account" {
            throw GooglePlayError(.configuration, "the key file is of type \(type.prefix(40)), not service_account")
        }
        guard let email = file.clientEmail, !email.isEmpty, email.utf8.count <= 320 else {
            throw GooglePlayError(.configuration, "the service account key file has no client_email")
        }
        guard let pem = file.privateKey else {
            throw GooglePlayError(.configuration, "the service account key file has no private_key")
        }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            // The key's bytes stay out of the message.
            throw GooglePlayError(.configuration, "the service account's private_key is not an RSA PEM key")
        }
        guard key.keySizeInBits >= 2048 else {
            throw GooglePlayError(.configuration, "the service account's RSA key is shorter than 2048 bits")
        }
        self.init(
            clientEmail: email, key: key, privateKeyId: file.privateKeyId,
            tokenURI: file.tokenURI ?? Self.googleTokenURI)
    }

    /// Reads a key file of at most 64 KiB.
    public init(contentsOfFile path: String) throws(GooglePlayError) {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 64 * 1024 else {
            throw GooglePlayError(
                .configuration, "cannot read a service account key file of at most 64 KiB from \(path)")
        }
        try self.init(json: data)
    }

    public var publicKey: _RSA.Signing.PublicKey { key.publicKey }
    public var description: String { "ServiceAccountCredential(\(clientEmail), key redacted)" }
    public var debugDescription: String { description }
}
