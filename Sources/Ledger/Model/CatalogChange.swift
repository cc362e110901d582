import Foundation

/// A change an operator made to the catalog (`catalog_changes`, migration 0017), recorded append-only
/// with who, when and why, as support actions are: an item added, renamed or retired, or sold on Google
/// Play under a product id (migration 0024).
public struct CatalogChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case add
        case rename
        case retire
        /// The item's Google Play product id was set (``CatalogItem/googleProductId`` after it).
        case googleProduct = "google_product"
    }

    public var changeId: Int64
    public var kind: Kind
    /// The item as it is after the change.
    public var item: CatalogItem
    /// The names before a rename or retire (nil for an add).
    public var nameBefore: String?
    public var nameEnBefore: String?
    public var actor: String
    public var reason: String
    public var changedAt: Date

    public init(
        changeId: Int64, kind: Kind, item: CatalogItem, nameBefore: String?, nameEnBefore: String?, actor: String,
        reason: String, changedAt: Date
    ) {
        self.changeId = changeId
        self.kind = kind
        self.item = item
        self.nameBefore = nameBefore
        self.nameEnBefore = nameEnBefore
        self.actor = actor
        self.reason = reason
        self.changedAt = changedAt
    }
}

/// An item to add to the catalog. Its kind, index, product id and price never change once added
/// (a trigger refuses it): purchases, grants and reports name the item by them.
public struct NewCatalogItem: Sendable, Hashable {
    public var item: ItemID
    public var productId: String
    /// The Korean name the SeSAC clients and the reports show.
    public var name: String
    public var nameEn: String
    /// Shown by `GET /api/v1/catalog`; empty when not given (the column is NOT NULL).
    public var description: String
    public var price: Money

    public init(item: ItemID, productId: String, name: String, nameEn: String, description: String = "", price: Money) {
        self.item = item
        self.productId = productId
        self.name = name
        self.nameEn = nameEn
        self.description = description
        self.price = price
    }

    /// Refuses what the catalog cannot hold before anything is written (the schema's CHECKs back it up).
    func validate() throws {
        try CatalogRules.index(item)
        try CatalogRules.productId(productId)
        try CatalogRules.name(name, what: "the Korean name")
        try CatalogRules.name(nameEn, what: "the English name")
        try CatalogRules.description(description)
        try Validation.currency(price.currency)
        guard price.amountMilli > 0 else {
            throw LedgerError(.invalidInput, "a paid item's price must be above zero (index 0 is the free item)")
        }
        guard price.amountMilli <= Validation.maximumPriceMilli else {
            throw LedgerError(
                .invalidInput,
                "price \(price.amountMilli) milliunits is over the ledger's bound of \(Validation.maximumPriceMilli)")
        }
    }
}

extension LedgerError.Code {
    /// The product is in the catalog but retired, and the purchase is dated on or after its retirement.
    public static let productRetired = LedgerError.Code("product_retired")
    /// Another catalog item has this product id.
    public static let productIdTaken = LedgerError.Code("product_id_taken")
    /// Another catalog item of this kind has this index.
    public static let itemIndexTaken = LedgerError.Code("item_index_taken")
    /// The catalog item was retired already.
    public static let alreadyRetired = LedgerError.Code("already_retired")
}

/// What an operator may write into the catalog: the checks `add`, `rename` and `retire` make before
/// anything reaches the database.
public enum CatalogRules {
    /// Names are shown in small places (the shop, report tables): 1–100 characters.
    public static let maximumNameLength = 100
    public static let maximumDescriptionLength = 500
    /// `item_index` is a smallint.
    public static let maximumIndex = Int(Int16.max)

    /// A paid item's index: 1…32767. Index 0 of each kind is the free item everyone owns; it is
    /// never added or retired.
    static func index(_ item: ItemID) throws {
        guard item.index != 0 else {
            throw LedgerError(
                .invalidInput, "index 0 is the free \(item.kind.rawValue) everyone owns; it cannot be added or retired")
        }
        guard (1...maximumIndex).contains(item.index) else {
            throw LedgerError(.invalidInput, "the index must be 1–\(maximumIndex), got \(item.index)")
        }
    }

    /// The item's index as a look-up names it: 0…32767.
    static func existingIndex(_ item: ItemID) throws {
        guard (0...maximumIndex).contains(item.index) else {
            throw LedgerError(.noSuchItem, "the catalog has no \(item)")
        }
    }

    /// App Store Connect's product ids: 1–100 of letters, digits, underscores and periods.
    static func productId(_ productId: String) throws {
        let bytes = productId.utf8
        let allowed = bytes.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard (1...100).contains(bytes.count), allowed else {
            throw LedgerError(
                .invalidInput,
                "the product id must be 1–100 letters, digits, underscores or periods (as App Store Connect allows)")
        }
    }

    /// 1–100 characters (code points, as the schema counts), not blank, every one visible, no control
    /// characters.
    static func name(_ name: String, what: String) throws {
        let scalars = name.unicodeScalars
        guard !name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw LedgerError(.invalidInput, "\(what) must not be empty")
        }
        guard scalars.count <= maximumNameLength else {
            throw LedgerError(
                .invalidInput, "\(what) must be at most \(maximumNameLength) characters, got \(scalars.count)")
        }
        // Line and paragraph separators too: they break a name's line, and PostgreSQL's [[:cntrl:]]
        // (the schema's CHECK) counts them as control characters in a UTF-8 locale.
        let refused: Set<Unicode.GeneralCategory> = [.control, .lineSeparator, .paragraphSeparator]
        guard scalars.allSatisfy({ !refused.contains($0.properties.generalCategory) }) else {
            throw LedgerError(.invalidInput, "\(what) contains control characters")
        }
        guard Validation.isVisible(name) else {
            throw LedgerError(
                .invalidInput, "\(what) contains invisible or bidirectional-control characters; write it in plain text")
        }
    }

    /// At most 500 characters; line breaks allowed, other control characters not.
    static func description(_ text: String) throws {
        let scalars = text.unicodeScalars
        guard scalars.count <= maximumDescriptionLength else {
            throw LedgerError(
                .invalidInput,
                "the description must be at most \(maximumDescriptionLength) characters, got \(scalars.count)")
        }
        guard scalars.allSatisfy({ $0.properties.generalCategory != .control || $0 == "\n" }),
            Validation.isVisible(text)
        else {
            throw LedgerError(
                .invalidInput, "the description contains control or invisible characters (only line breaks are allowed)"
            )
        }
    }

    /// An exact decimal amount in major units (`2500`, `0.99`; at most 3 decimals, no sign, no
    /// grouping) read into integer milliunits, never through floating point: `"2500"` KRW is
    /// `2_500_000` milliunits. Refuses zero and anything over the ledger's bound.
    public static func price(_ text: String, currency: String) throws -> Money {
        try Validation.currency(currency)
        let bytes = Array(text.utf8)
        let point = bytes.firstIndex(of: UInt8(ascii: "."))
        let whole = point.map { bytes[..<$0] } ?? bytes[...]
        let fraction = point.map { bytes[($0 + 1)...] } ?? []
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        guard !whole.isEmpty, whole.allSatisfy(isDigit), fraction.allSatisfy(isDigit), point == nil || !fraction.isEmpty
        else {
            throw LedgerError(.invalidInput, "the price must be a decimal amount like 2500 or 0.99, got '\(text)'")
        }
        guard fraction.count <= 3 else {
            throw LedgerError(
                .invalidInput, "the price '\(text)' has more than 3 decimals (prices are kept in milliunits)")
        }
        // 12 digits at most: below 10^12 units, so the milliunits fit Int64 before the bound is checked.
        let significant = whole.drop { $0 == UInt8(ascii: "0") }
        guard significant.count <= 12 else { throw LedgerError(.invalidInput, "the price '\(text)' is too large") }
        var milli: Int64 = 0
        for digit in significant { milli = milli * 10 + Int64(digit - UInt8(ascii: "0")) }
        milli *= 1000
        var scale: Int64 = 100
        for digit in fraction {
            milli += Int64(digit - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        guard milli > 0 else { throw LedgerError(.invalidInput, "the price must be above zero") }
        guard milli <= Validation.maximumPriceMilli else {
            throw LedgerError(.invalidInput, "the price '\(text)' is over the ledger's bound")
        }
        return Money(amountMilli: milli, currency: currency)
    }
}
