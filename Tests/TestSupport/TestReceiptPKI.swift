import Crypto
import Foundation
import Receipts
import SwiftASN1
import X509
import _CryptoExtras

/// A throwaway certificate authority shaped like the one behind classic App Store receipts: an RSA root
/// (like Apple Inc. Root) → a WWDR-like intermediate (marker OID 1.2.840.113635.100.6.2.1) → a
/// receipt-signing leaf (OID 1.2.840.113635.100.6.11.1), RSA-2048 throughout, SHA-256 unless told
/// otherwise. It signs receipts (``TestReceipt``) as the App Store does.
public struct TestReceiptPKI: Sendable {
    public enum Digest: Sendable { case sha256, sha1 }

    public struct Options: Sendable {
        public var rootName = "ShopLedger Test Receipt Root"
        public var intermediateHasAppleOID = true
        public var leafHasAppleOID = true
        /// How the root signs the intermediate (SHA-1 like Apple's first WWDR intermediate, or SHA-256).
        public var intermediateDigest = Digest.sha256
        public var leafNotBefore = Date().addingTimeInterval(-TestPKI.year)
        public var leafNotAfter = Date().addingTimeInterval(TestPKI.year)
        /// A root key of its own instead of the shared one (a stranger's CA).
        public var ownRootKey = false
        /// The root's and intermediate's validity; nil: ten and five years either side of now.
        public var caValidity: ClosedRange<Date>? = nil

        public init(
            rootName: String = "ShopLedger Test Receipt Root", intermediateHasAppleOID: Bool = true,
            leafHasAppleOID: Bool = true, intermediateDigest: Digest = .sha256,
            leafNotBefore: Date = Date().addingTimeInterval(-TestPKI.year),
            leafNotAfter: Date = Date().addingTimeInterval(TestPKI.year), ownRootKey: Bool = false,
            caValidity: ClosedRange<Date>? = nil
        ) {
            self.rootName = rootName
            self.intermediateHasAppleOID = intermediateHasAppleOID
            self.leafHasAppleOID = leafHasAppleOID
            self.intermediateDigest = intermediateDigest
            self.leafNotBefore = leafNotBefore
            self.leafNotAfter = leafNotAfter
            self.ownRootKey = ownRootKey
            self.caValidity = caValidity
        }
    }

    /// RSA-2048 keys take a while to generate; the PKIs share three (plus fresh roots for strangers).
    private static let sharedKeys:
        (
            root: _RSA.Signing.PrivateKey, intermediate: _RSA.Signing.PrivateKey,
            leaf: _RSA.Signing.PrivateKey
        ) = {
            (
                try! _RSA.Signing.PrivateKey(keySize: .bits2048), try! _RSA.Signing.PrivateKey(keySize: .bits2048),
                try! _RSA.Signing.PrivateKey(keySize: .bits2048)
            )
        }()

    /// The default PKI, built once.
    public static let shared: TestReceiptPKI = try! TestReceiptPKI()

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let leafKey: _RSA.Signing.PrivateKey

    public init(_ options: Options = Options()) throws {
        let keys = Self.sharedKeys
        let rootKey = options.ownRootKey ? try _RSA.Signing.PrivateKey(keySize: .bits2048) : keys.root
        let now = Date()
        let rootName = try DistinguishedName {
            CountryName("US")
            OrganizationName("ShopLedger Test")
            CommonName(options.rootName)
        }
        let intermediateName = try DistinguishedName {
            CountryName("US")
            OrganizationName("ShopLedger Test")
            CommonName("ShopLedger Test Worldwide Developer Relations")
        }
        let leafName = try DistinguishedName {
            CountryName("US")
            OrganizationName("ShopLedger Test")
            CommonName("ShopLedger Test Receipt Signing")
        }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
            notValidBefore: options.caValidity?.lowerBound ?? now.addingTimeInterval(-10 * TestPKI.year),
            notValidAfter: options.caValidity?.upperBound ?? now.addingTimeInterval(10 * TestPKI.year),
            issuer: rootName, subject: rootName, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey))
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(keys.intermediate.publicKey),
            notValidBefore: options.caValidity?.lowerBound ?? now.addingTimeInterval(-5 * TestPKI.year),
            notValidAfter: options.caValidity?.upperBound ?? now.addingTimeInterval(5 * TestPKI.year),
            issuer: rootName, subject: intermediateName,
            signatureAlgorithm: options.intermediateDigest == .sha1 ? .sha1WithRSAEncryption : .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                if options.intermediateHasAppleOID {
                    Certificate.Extension(oid: TestPKI.intermediateOID, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: .init(rootKey))
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(keys.leaf.publicKey),
            notValidBefore: options.leafNotBefore, notValidAfter: options.leafNotAfter,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if options.leafHasAppleOID {
                    Certificate.Extension(oid: TestPKI.leafOID, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: .init(keys.intermediate))
        leafKey = keys.leaf
    }

    public var rootCertificate: RootCertificate { try! RootCertificate(derEncoded: TestPKI.der(root)) }

    /// How the `SignedData` container is written.
    public enum Container: Sendable {
        /// Definite lengths throughout.
        case der
        /// Indefinite lengths in the outer structure and a constructed content OCTET STRING, as Apple writes.
        case berIndefinite
    }

    /// A classic receipt: PKCS#7 SignedData over `payload` (embedded), signed by the leaf, carrying leaf,
    /// intermediate and (unless told not to) root. `signatureAlgorithmOID` defaults to what Apple writes,
    /// bare `rsaEncryption`; `signedAttributes` adds content-type and message-digest attributes;
    /// `certificates` replaces the certificates carried.
    public func sign(
        _ payload: [UInt8], container: Container = .berIndefinite, digest: Digest = .sha256,
        signedAttributes: Bool = false, signatureAlgorithmOID: [UInt] = [1, 2, 840, 113_549, 1, 1, 1],
        includeRoot: Bool = true, signingKey: _RSA.Signing.PrivateKey? = nil, certificates: [Certificate]? = nil
    ) -> [UInt8] {
        typealias B = DERBuilder
        let key = signingKey ?? leafKey
        let digestOID: [UInt] = digest == .sha256 ? [2, 16, 840, 1, 101, 3, 4, 2, 1] : [1, 3, 14, 3, 2, 26]
        func hash(_ bytes: [UInt8]) -> [UInt8] {
            digest == .sha256 ? Array(SHA256.hash(data: bytes)) : Array(Insecure.SHA1.hash(data: bytes))
        }
        func rsaSign(_ bytes: [UInt8]) -> [UInt8] {
            let signature =
                digest == .sha256
                ? try! key.signature(for: SHA256.hash(data: bytes), padding: .insecurePKCS1v1_5)
                : try! key.signature(for: Insecure.SHA1.hash(data: bytes), padding: .insecurePKCS1v1_5)
            return Array(signature.rawRepresentation)
        }

        var attributesField: [UInt8] = []
        let signature: [UInt8]
        if signedAttributes {
            let attributes = B.set([
                B.sequence(B.oid([1, 2, 840, 113_549, 1, 9, 3]), B.set([B.oid([1, 2, 840, 113_549, 1, 7, 1])])),
                B.sequence(B.oid([1, 2, 840, 113_549, 1, 9, 4]), B.set([B.octetString(hash(payload))])),
            ])
            signature = rsaSign(attributes)
            attributesField = [0xA0] + attributes.dropFirst()
        } else {
            signature = rsaSign(payload)
        }
        return Self.signedData(
            payload, certificates: certificates ?? (includeRoot ? [leaf, intermediate, root] : [leaf, intermediate]),
            signer: leaf,
            digestOID: digestOID, signatureAlgorithmOID: signatureAlgorithmOID, signature: signature,
            signedAttributes: attributesField, container: container)
    }

    /// A PKCS#7 `SignedData` over `payload` (embedded) carrying `certificates`, with one signer named by
    /// `signer`'s issuer and serial number and the given algorithms, signature and (`[0]`-tagged) signed
    /// attributes.
    public static func signedData(
        _ payload: [UInt8], certificates: [Certificate], signer: Certificate, digestOID: [UInt],
        signatureAlgorithmOID: [UInt], signature: [UInt8], signedAttributes: [UInt8] = [], container: Container
    ) -> [UInt8] {
        typealias B = DERBuilder
        let digestAlgorithm = B.sequence(B.oid(digestOID), B.null)
        var issuerSerializer = DER.Serializer()
        try! issuerSerializer.serialize(signer.issuer)
        let signerInfo = B.sequence(
            B.integer(1),
            B.sequence(issuerSerializer.serializedBytes, B.tlv(0x02, Array(signer.serialNumber.bytes))),
            digestAlgorithm, signedAttributes,
            B.sequence(B.oid(signatureAlgorithmOID), B.null),
            B.octetString(signature))
        let certificates = certificates.flatMap(TestPKI.der)
        let dataOID = B.oid([1, 2, 840, 113_549, 1, 7, 1])
        let signedDataOID = B.oid([1, 2, 840, 113_549, 1, 7, 2])

        switch container {
        case .der:
            let content = B.sequence(dataOID, B.tlv(0xA0, B.octetString(payload)))
            let signedData = B.sequence(
                B.integer(1), B.set([digestAlgorithm]), content, B.tlv(0xA0, certificates), B.set([signerInfo]))
            return B.sequence(signedDataOID, B.tlv(0xA0, signedData))
        case .berIndefinite:
            // Apple's layout: indefinite lengths down to a constructed OCTET STRING of definite chunks.
            let chunks = stride(from: 0, to: max(payload.count, 1), by: 1000).map { start in
                B.octetString(Array(payload[start..<min(start + 1000, payload.count)]))
            }
            let content = B.indefinite(0x30, dataOID + B.indefinite(0xA0, B.indefinite(0x24, chunks.flatMap { $0 })))
            let signedData = B.indefinite(
                0x30,
                B.integer(1) + B.set([digestAlgorithm]) + content + B.tlv(0xA0, certificates)
                    + B.set([signerInfo]))
            return B.indefinite(0x30, signedDataOID + B.indefinite(0xA0, signedData))
        }
    }

    /// ``sign(_:container:digest:signedAttributes:signatureAlgorithmOID:includeRoot:signingKey:)`` as base64,
    /// what clients post.
    public func receipt(
        _ receipt: TestReceipt, container: Container = .berIndefinite, digest: Digest = .sha256
    )
        -> String
    {
        Data(sign(receipt.payload(), container: container, digest: digest)).base64EncodedString()
    }
}

/// The content of a classic receipt, written as the App Store writes it: a DER SET of
/// (type, version, value) attributes, in-app purchases as nested sets, unknown fields included.
public struct TestReceipt: Sendable {
    public struct Purchase: Sendable {
        public var productId: String
        public var transactionId: String
        public var originalTransactionId: String?
        public var purchaseDate: String
        public var originalPurchaseDate: String?
        /// Empty string: written as the empty IA5String Apple writes for an unset date.
        public var cancellationDate: String
        public var subscriptionExpirationDate: String?
        public var quantity: Int

        public init(
            productId: String, transactionId: String, originalTransactionId: String? = nil,
            purchaseDate: String = "2026-11-01T09:30:00Z", originalPurchaseDate: String? = nil,
            cancellationDate: String = "", subscriptionExpirationDate: String? = nil, quantity: Int = 1
        ) {
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.purchaseDate = purchaseDate
            self.originalPurchaseDate = originalPurchaseDate
            self.cancellationDate = cancellationDate
            self.subscriptionExpirationDate = subscriptionExpirationDate
            self.quantity = quantity
        }
    }

    public var receiptType: String
    public var bundleId: String
    public var appVersion: String
    /// RFC 3339; nil leaves field 12 out.
    public var creationDate: String?
    public var purchases: [Purchase]

    public init(
        receiptType: String = "Production", bundleId: String = "com.memolease.sesac1", appVersion: String = "42",
        creationDate: String? = TestReceipt.timestamp(Date()), purchases: [Purchase] = []
    ) {
        self.receiptType = receiptType
        self.bundleId = bundleId
        self.appVersion = appVersion
        self.creationDate = creationDate
        self.purchases = purchases
    }

    public static func timestamp(_ date: Date) -> String {
        date.formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted)
        )
        .replacingOccurrences(of: "+0000", with: "Z")
    }

    static func attribute(_ type: Int, _ value: [UInt8], version: Int = 1) -> [UInt8] {
        DERBuilder.sequence(DERBuilder.integer(type), DERBuilder.integer(version), DERBuilder.octetString(value))
    }

    /// The DER receipt attributes.
    public func payload() -> [UInt8] {
        typealias B = DERBuilder
        var attributes: [[UInt8]] = [
            Self.attribute(0, B.utf8String(receiptType)),
            Self.attribute(2, B.utf8String(bundleId)),
            Self.attribute(3, B.utf8String(appVersion)),
            Self.attribute(4, Array(repeating: 0xA5, count: 16)),  // opaque value
            Self.attribute(5, Array(repeating: 0x5A, count: 20)),  // SHA-1 hash for the device
            Self.attribute(19, B.utf8String("1.0")),  // original application version
            Self.attribute(25, B.integer(3)),  // a type Apple does not document: skipped
        ]
        if let creationDate { attributes.append(Self.attribute(12, B.ia5String(creationDate))) }
        for purchase in purchases {
            var fields: [[UInt8]] = [
                Self.attribute(1701, B.integer(purchase.quantity)),
                Self.attribute(1702, B.utf8String(purchase.productId)),
                Self.attribute(1703, B.utf8String(purchase.transactionId)),
                Self.attribute(1705, B.utf8String(purchase.originalTransactionId ?? purchase.transactionId)),
                Self.attribute(1704, B.ia5String(purchase.purchaseDate)),
                Self.attribute(1706, B.ia5String(purchase.originalPurchaseDate ?? purchase.purchaseDate)),
                Self.attribute(1712, B.ia5String(purchase.cancellationDate)),
                Self.attribute(1708, B.ia5String(purchase.subscriptionExpirationDate ?? "")),  // unset: empty
                Self.attribute(1711, B.integer(0)),
                Self.attribute(1719, B.integer(0)),  // unknown to ShopLedger: skipped
            ]
            attributes.append(Self.attribute(17, B.set(fields)))
        }
        return B.set(attributes)
    }
}
