import Crypto
import Foundation
import Receipts
import SwiftASN1
import X509

/// A throwaway certificate authority shaped like Apple's: root → intermediate (WWDR OID) → leaf
/// (receipt-signing OID), all P-256, built at run time. It signs JWS the way the App Store does.
public struct TestPKI: Sendable {
    public static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    public static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    public static let year: TimeInterval = 365 * 24 * 3600

    public struct Options {
        public var rootName = "ShopLedger Test Root CA"
        public var intermediateHasAppleOID = true
        public var leafHasAppleOID = true
        public var leafNotBefore = Date().addingTimeInterval(-TestPKI.year)
        public var leafNotAfter = Date().addingTimeInterval(TestPKI.year)
        /// The root's and intermediate's validity; nil: ten and five years either side of now. The fuzz PKI
        /// fixes it, so that its seeds do not depend on the day they were made.
        public var caValidity: ClosedRange<Date>? = nil

        public init(
            rootName: String = "ShopLedger Test Root CA", intermediateHasAppleOID: Bool = true,
            leafHasAppleOID: Bool = true, leafNotBefore: Date = Date().addingTimeInterval(-TestPKI.year),
            leafNotAfter: Date = Date().addingTimeInterval(TestPKI.year), caValidity: ClosedRange<Date>? = nil
        ) {
            self.rootName = rootName
            self.intermediateHasAppleOID = intermediateHasAppleOID
            self.leafHasAppleOID = leafHasAppleOID
            self.leafNotBefore = leafNotBefore
            self.leafNotAfter = leafNotAfter
            self.caValidity = caValidity
        }
    }

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let leafKey: P256.Signing.PrivateKey

    public init(_ options: Options = Options()) throws {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let now = Date()
        let rootName = try DistinguishedName { CommonName(options.rootName) }
        let intermediateName = try DistinguishedName { CommonName("ShopLedger Test WWDR Intermediate") }
        let leafName = try DistinguishedName { CommonName("ShopLedger Test Receipt Signing") }

        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
            notValidBefore: options.caValidity?.lowerBound ?? now.addingTimeInterval(-10 * Self.year),
            notValidAfter: options.caValidity?.upperBound ?? now.addingTimeInterval(10 * Self.year),
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey))
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: options.caValidity?.lowerBound ?? now.addingTimeInterval(-5 * Self.year),
            notValidAfter: options.caValidity?.upperBound ?? now.addingTimeInterval(5 * Self.year),
            issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                if options.intermediateHasAppleOID {
                    Certificate.Extension(oid: Self.intermediateOID, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: .init(rootKey))
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: options.leafNotBefore, notValidAfter: options.leafNotAfter,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if options.leafHasAppleOID {
                    Certificate.Extension(oid: Self.leafOID, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: .init(intermediateKey))
        self.leafKey = leafKey
    }

    public static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        try! serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    public var rootCertificate: RootCertificate { try! RootCertificate(derEncoded: Self.der(root)) }

    /// `x5c` as the App Store sends it: standard base64 DER, leaf first, root last.
    public var x5c: [String] { [leaf, intermediate, root].map { Data(Self.der($0)).base64EncodedString() } }

    /// A compact JWS over `payload`, signed by the leaf key (or `signingKey`), with the given header.
    public func sign(
        _ payload: [String: Any], header: [String: Any]? = nil, signingKey: P256.Signing.PrivateKey? = nil,
        padded: Bool = false
    ) -> String {
        let header = header ?? ["alg": "ES256", "x5c": x5c]
        let signingInput =
            Self.base64URL(Self.json(header), padded: padded) + "." + Self.base64URL(Self.json(payload), padded: padded)
        let signature = try! (signingKey ?? leafKey).signature(for: Data(signingInput.utf8))
        return signingInput + "." + Self.base64URL(signature.rawRepresentation, padded: padded)
    }

    public static func json(_ object: [String: Any]) -> Data {
        try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    public static func base64URL(_ data: some DataProtocol, padded: Bool = false) -> String {
        // Byte by byte rather than three `replacingOccurrences` (NSString, locale-aware): the load
        // benchmark signs 100,000 transactions with this.
        var bytes = Array(Data(data).base64EncodedData())
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "+"): bytes[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): bytes[index] = UInt8(ascii: "_")
            default: break
            }
        }
        if !padded { while bytes.last == UInt8(ascii: "=") { bytes.removeLast() } }
        return String(decoding: bytes, as: UTF8.self)
    }
}
