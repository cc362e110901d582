import CivilDates

/// One daily Summary Sales Report as parsed: the header, the one Pacific-time day its rows cover,
/// and its rows with exact amounts. Made only by `SummarySalesParser`, so every value is checked.
public struct SummarySalesReport: Sendable, Hashable {
    /// The report's day (every row's Begin Date and End Date).
    public let date: CalendarDate
    /// The version inferred from the header's columns: `1_0` ... `1_3` (docs/finance.md).
    public let formatVersion: String
    /// The header's column names, in the file's order.
    public let columns: [String]
    /// The first row's Provider and Provider Country, when the file has those columns.
    public let provider: String?
    public let providerCountry: String?
    public let rows: [SummarySalesRow]
    /// Bytes of the file after inflating.
    public let uncompressedBytes: Int
    /// SHA-256 of the uncompressed bytes: the report's identity (the same content imports once).
    public let sha256: [UInt8]
}

/// One line of the report: a product sold (or refunded, or restored) in a country and currency.
public struct SummarySalesRow: Sendable, Hashable {
    /// The 1-based line of the file (the header is line 1).
    public let line: Int
    /// For an in-app purchase, its product identifier (our `purchases.product_id`).
    public let sku: String
    public let title: String?
    /// Product Type Identifier: `IA1` an in-app purchase, `IA3` a restored non-consumable (not a
    /// sale), `1`, `1F`, `7`, ... apps and updates.
    public let productType: String
    /// Units; negative for refunds.
    public let units: Int
    /// Per unit, in `customerCurrency`.
    public let customerPriceMilli: Int64
    public let customerCurrency: String
    /// ISO 3166-1 alpha-2.
    public let countryCode: String
    /// Per unit, in `proceedsCurrency`.
    public let developerProceedsMilli: Int64
    public let proceedsCurrency: String
    public let appleIdentifier: String?
    public let parentIdentifier: String?
    public let promoCode: String?
    public let version: String?

    /// An in-app purchase sale or refund (not a restore, not an app download).
    public var isInAppPurchase: Bool { productType == "IA1" }
}
