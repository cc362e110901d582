import Receipts

/// Which set of accounts a transaction's money goes to. Only App Store and Google Play Production
/// transactions reach the production accounts (`receivable:app_store`, `receivable:google_play`,
/// `revenue:face`, ...); every other environment (a Play test purchase is `Sandbox`) and
/// the stub store get accounts prefixed with their book (`sandbox:receivable:app_store`, `stub:revenue:face`).
/// The database enforces the same rule (a CHECK on `purchases.book`) and derives account names with
/// `ledger_account(book, name)`.
public enum LedgerBook {
    public static let production = "production"

    public static func name(store: VerifiedTransaction.Store, environment: StoreEnvironment) -> String {
        if store == .stub { return "stub" }
        if (store == .appStore || store == .googlePlay) && environment == .production { return production }
        return environment.rawValue.lowercased()
    }

    /// The account `name` (e.g. `revenue:face`) in `book`.
    public static func account(_ name: String, book: String) -> String {
        book == production ? name : "\(book):\(name)"
    }
}
