import Crypto
import Foundation
import SwiftASN1
import X509

/// A trust anchor for App Store signed data: a root certificate that `x5c` chains must lead to.
///
/// Load the defaults with ``appleRootCAG3`` (embedded in the binary) or other roots from PEM or DER
/// files with ``load(contentsOfFile:)``.
public struct RootCertificate: Sendable, Hashable, CustomStringConvertible {
    let certificate: Certificate
    /// The DER encoding.
    public let derBytes: [UInt8]

    /// Parses one DER-encoded certificate.
    public init(derEncoded bytes: [UInt8]) throws(ReceiptsConfigurationError) {
        do {
            self.certificate = try Certificate(derEncoded: bytes)
        } catch {
            throw ReceiptsConfigurationError("not a DER X.509 certificate: \(error)")
        }
        self.derBytes = bytes
    }

    /// Parses certificates from PEM (one or more `CERTIFICATE` blocks) or a single DER certificate.
    public static func parse(_ bytes: [UInt8]) throws(ReceiptsConfigurationError) -> [RootCertificate] {
        let pemMarker = Array("-----BEGIN".utf8)
        guard bytes.firstRange(of: pemMarker) != nil else {
            return [try RootCertificate(derEncoded: bytes)]
        }
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw ReceiptsConfigurationError("PEM does not parse: \(error)")
        }
        let certificates = documents.filter { $0.discriminator == "CERTIFICATE" }
        guard !certificates.isEmpty else { throw ReceiptsConfigurationError("PEM holds no CERTIFICATE block") }
        var roots: [RootCertificate] = []
        for document in certificates {
            roots.append(try RootCertificate(derEncoded: document.derBytes))
        }
        return roots
    }

    /// Loads the certificates of a PEM or DER file (at most 1 MiB).
    public static func load(contentsOfFile path: String) throws(ReceiptsConfigurationError) -> [RootCertificate] {
        let maximumFileBytes = 1 << 20
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ReceiptsConfigurationError("cannot open root certificate file \(path)")
        }
        defer { try? handle.close() }
        let data: Data?
        do {
            data = try handle.read(upToCount: maximumFileBytes + 1)
        } catch {
            throw ReceiptsConfigurationError("cannot read root certificate file \(path): \(error)")
        }
        guard let data, !data.isEmpty else {
            throw ReceiptsConfigurationError("root certificate file \(path) is empty")
        }
        guard data.count <= maximumFileBytes else {
            throw ReceiptsConfigurationError("root certificate file \(path) is over 1 MiB")
        }
        do {
            return try parse([UInt8](data))
        } catch {
            throw ReceiptsConfigurationError("\(path): \(error.message)")
        }
    }

    /// SHA-256 of the DER encoding, as 64 uppercase hex digits (the form Apple publishes).
    public var sha256Fingerprint: String { Hex.encode(SHA256.hash(data: derBytes)).uppercased() }

    /// The subject distinguished name, e.g. `CN=Apple Root CA - G3,OU=...`.
    public var subject: String { String(describing: certificate.subject) }

    public var notValidAfter: Date { certificate.notValidAfter }

    public var description: String { "\(subject) (SHA-256 \(sha256Fingerprint))" }

    public static func == (lhs: RootCertificate, rhs: RootCertificate) -> Bool { lhs.derBytes == rhs.derBytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(derBytes) }
}
