/// Everything the shop shows a user about themself, read in one statement: the user (profile, equipped
/// items), what they own, and the transaction ids of their recorded purchases.
public struct AccountSummary: Sendable, Hashable {
    public var user: User
    public var inventory: Inventory
    /// Every store and environment, oldest purchase first.
    public var transactionIds: [String]

    public init(user: User, inventory: Inventory, transactionIds: [String]) {
        self.user = user
        self.inventory = inventory
        self.transactionIds = transactionIds
    }
}
