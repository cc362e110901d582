/// The one error type of the ledger: bad input, unknown users or products, and items that do not exist.
///
/// Whenever a ledger call throws a `LedgerError`, nothing was written. Database failures surface as
/// `PostgresError`.
public struct LedgerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as an extensible machine-readable code (compare with `==`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The uid has not registered.
        public static let userNotRegistered = Code("user_not_registered")
        /// The transaction's product id is not in the catalog.
        public static let unknownProduct = Code("unknown_product")
        /// An item `(kind, index)` that the catalog does not have.
        public static let noSuchItem = Code("no_such_item")
        /// A value the ledger cannot store (empty id, bad currency, negative price, ...).
        public static let invalidInput = Code("invalid_input")
        /// No support grant has the id a revoke names.
        public static let noSuchGrant = Code("no_such_grant")
        /// No purchase has the transaction id (or original transaction id) a look-up names.
        public static let noSuchPurchase = Code("no_such_purchase")
        /// The support grant a revoke names was revoked already.
        public static let alreadyRevoked = Code("already_revoked")
        /// The transaction's `appAccountToken` is not the one the user's earlier purchases carry.
        public static let accountTokenMismatch = Code("account_token_mismatch")
    }

    public var code: Code
    /// A human-readable explanation; safe to log (no evidence, no profile data).
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "LedgerError(\(code)): \(message)" }

    public static func userNotRegistered(_ uid: String) -> LedgerError {
        LedgerError(.userNotRegistered, "user \(uid) is not registered")
    }
}
