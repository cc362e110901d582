/// The environment a transaction was made in, spelled as Apple spells it (`"Production"`, `"Sandbox"`, ...),
/// plus `"Stub"` for ShopLedger's own stub receipts.
///
/// Extensible (a struct, not an enum) so that a value Apple adds later decodes and is then refused by
/// configuration rather than by a decoding failure.
public struct StoreEnvironment: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let production = StoreEnvironment(rawValue: "Production")
    public static let sandbox = StoreEnvironment(rawValue: "Sandbox")
    /// StoreKit testing in Xcode. Its data is signed by a local Xcode certificate, not by Apple.
    public static let xcode = StoreEnvironment(rawValue: "Xcode")
    /// StoreKit local testing. Not signed by Apple.
    public static let localTesting = StoreEnvironment(rawValue: "LocalTesting")
    /// ShopLedger stub receipts (development and tests only).
    public static let stub = StoreEnvironment(rawValue: "Stub")
}
