import Foundation

/// What a ``ReceiptVerifier`` accepts.
///
/// The defaults are the production settings for the shop: App Store data only (no stubs), Production
/// and Sandbox environments (TestFlight and App Review use Sandbox; each transaction records which),
/// Non-Consumable products, Apple Root CA - G3 as the only trust anchor for signed data and Apple Inc.
/// Root Certificate for classic receipts.
public struct VerifierConfiguration: Sendable {
    /// The SeSAC Study app's bundle id: `--bundle-id`'s default.
    public static let defaultBundleId = "com.memolease.sesac1"

    /// The app's bundle id; every transaction, notification and stub must carry exactly this one.
    public var bundleId: String
    /// Environments accepted for App Store data. `Xcode` and `LocalTesting` data is not signed by Apple and
    /// passes only if its chain leads to a configured root with Apple's OIDs; there is no unsigned path.
    public var acceptedEnvironments: Set<StoreEnvironment>
    /// Product types accepted for purchases (not checked on notifications).
    public var acceptedProductTypes: Set<ProductType>
    /// Trust anchors for `x5c` chains.
    public var rootCertificates: [RootCertificate]
    /// Trust anchors for classic app receipts: Apple Inc. Root Certificate by default; Xcode's StoreKit
    /// Testing certificate in development.
    public var receiptRootCertificates: [RootCertificate]
    /// Whether stub receipts are accepted at all (development and tests). Never in production.
    public var acceptsStubReceipts: Bool
    /// HMAC-SHA256 key for stub receipts. When set, unsigned or wrongly signed stubs are refused;
    /// when nil, stubs are accepted without checking any signature line.
    public var stubSecret: String?
    /// Largest receipt, JWS or notification accepted, in UTF-8 bytes. Checked before anything is decoded.
    public var maxInputBytes: Int
    /// How many verified (leaf, intermediate) chains to remember; 0 validates every chain afresh.
    public var chainCacheCapacity: Int
    /// The clock the claimed dates are checked against (``SignedDateWindow``); tests pin it.
    public var now: @Sendable () -> Date

    /// The dates a payload may claim now.
    var dateWindow: SignedDateWindow { SignedDateWindow(now: now()) }

    public static let defaultMaxInputBytes = 64 * 1024

    public init(
        bundleId: String,
        acceptedEnvironments: Set<StoreEnvironment> = [.production, .sandbox],
        acceptedProductTypes: Set<ProductType> = [.nonConsumable],
        rootCertificates: [RootCertificate] = [.appleRootCAG3],
        receiptRootCertificates: [RootCertificate] = [.appleIncRoot],
        acceptsStubReceipts: Bool = false,
        stubSecret: String? = nil,
        maxInputBytes: Int = VerifierConfiguration.defaultMaxInputBytes,
        chainCacheCapacity: Int = 32,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.bundleId = bundleId
        self.acceptedEnvironments = acceptedEnvironments
        self.acceptedProductTypes = acceptedProductTypes
        self.rootCertificates = rootCertificates
        self.receiptRootCertificates = receiptRootCertificates
        self.acceptsStubReceipts = acceptsStubReceipts
        self.stubSecret = stubSecret
        self.maxInputBytes = maxInputBytes
        self.chainCacheCapacity = chainCacheCapacity
        self.now = now
    }
}
