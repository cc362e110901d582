import Ledger

/// The catalog's item names and product ids, as the report shows them.
public struct ReportCatalog: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public let productId: String?
        public let name: String
    }

    public let entries: [ItemID: Entry]

    public init(entries: [ItemID: Entry]) {
        self.entries = entries
    }

    /// The item's name (`튼튼 새싹`), or `face 9` for an item the catalog does not know.
    public func name(_ item: ItemID) -> String { entries[item]?.name ?? item.description }

    public func productId(_ item: ItemID) -> String { entries[item]?.productId ?? "" }
}
