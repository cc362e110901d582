import Receipts

/// Input checks made before anything reaches the database, so bad input gets a clear
/// `LedgerError(.invalidInput)` (the schema's CHECK constraints back them up).
public enum Validation {
    /// Firebase uids are at most 128 characters; we accept 1–128 printable characters.
    static func uid(_ uid: String) throws {
        try identifier(uid, what: "uid")
    }

    /// Whether every character of `text` shows: no invisible (default-ignorable, e.g. U+200B, U+FEFF,
    /// U+3164 HANGUL FILLER) or bidi-control (U+202A–U+202E, U+2066–U+2069) scalars, but for the joiner
    /// and variation selector inside emoji sequences (👨‍👩‍👧, ❤️). What a person reads is what is stored.
    public static func isVisible(_ text: String) -> Bool {
        text.allSatisfy { character in
            let scalars = character.unicodeScalars
            let isEmojiSequence = scalars.contains { scalar in scalar.value > 0x7F && scalar.properties.isEmoji }
            return scalars.allSatisfy { scalar in
                let properties = scalar.properties
                if properties.isBidiControl { return false }
                guard properties.isDefaultIgnorableCodePoint || invisibleLetters.contains(scalar.value) else {
                    return true
                }
                // ZWJ and VS16 hold emoji sequences together; elsewhere they hide.
                return isEmojiSequence && (scalar.value == 0x200D || scalar.value == 0xFE0F)
            }
        }
    }

    /// Letters that render as nothing though not default-ignorable: the Hangul fillers.
    static let invisibleLetters: Set<UInt32> = [0x115F, 0x1160, 0x3164, 0xFFA0]

    static func identifier(_ value: String, what: String) throws {
        let scalars = value.unicodeScalars
        guard !scalars.isEmpty, scalars.count <= 128 else {
            throw LedgerError(.invalidInput, "\(what) must be 1–128 characters, got \(scalars.count)")
        }
        guard scalars.allSatisfy({ $0.properties.generalCategory != .control }) else {
            throw LedgerError(.invalidInput, "\(what) contains control characters")
        }
    }

    /// The largest price a purchase may carry: a trillion major units (10^15 milliunits), far above
    /// any App Store price in any currency, and small enough that thousands of purchases still sum
    /// within Int64 (reports check their arithmetic beyond that).
    public static let maximumPriceMilli: Int64 = 1_000_000_000_000_000

    static func transaction(_ transaction: VerifiedTransaction) throws {
        try store(transaction.store, environment: transaction.environment)
        try identifier(transaction.transactionId, what: "transactionId")
        try identifier(transaction.originalTransactionId, what: "originalTransactionId")
        try identifier(transaction.productId, what: "productId")
        if let storefront = transaction.storefront { try identifier(storefront, what: "storefront") }
        switch (transaction.priceMilli, transaction.currency) {
        case (nil, nil):
            break
        case (let price?, let currency?):
            guard price >= 0 else { throw LedgerError(.invalidInput, "price must not be negative") }
            guard price <= maximumPriceMilli else {
                throw LedgerError(
                    .invalidInput, "price \(price) milliunits is over the ledger's bound of \(maximumPriceMilli)")
            }
            try self.currency(currency)
        default:
            throw LedgerError(.invalidInput, "price and currency must be given together")
        }
        guard transaction.ownershipType == .purchased || transaction.ownershipType == .familyShared else {
            throw LedgerError(.invalidInput, "unknown ownership type \(transaction.ownershipType)")
        }
        try evidence(transaction.evidenceSHA256)
    }

    static func refundEvent(_ event: RefundEvent) throws {
        try identifier(event.sourceEventId, what: "sourceEventId")
        try store(event.store, environment: event.environment)
        try identifier(event.transactionId, what: "transactionId")
        try evidence(event.evidenceSHA256)
    }

    static func store(_ store: VerifiedTransaction.Store, environment: StoreEnvironment) throws {
        let storeOK =
            (1...32).contains(store.rawValue.utf8.count)
            && store.rawValue.utf8.allSatisfy { (0x61...0x7A).contains($0) || $0 == 0x5F }
        guard storeOK else { throw LedgerError(.invalidInput, "store must be 1–32 of a–z and _") }
        let environmentOK =
            (1...32).contains(environment.rawValue.utf8.count)
            && environment.rawValue.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        guard environmentOK else { throw LedgerError(.invalidInput, "environment must be 1–32 ASCII letters") }
        // Only the exact App Store Production environment may use the production book.
        if environment.rawValue.lowercased() == LedgerBook.production, environment != .production {
            throw LedgerError(.invalidInput, "environment \(environment) is not Production")
        }
    }

    static func currency(_ currency: String) throws {
        guard currency.utf8.count == 3, currency.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) else {
            throw LedgerError(.invalidInput, "currency must be three capital letters (ISO 4217)")
        }
    }

    static func evidence(_ digest: [UInt8]) throws {
        guard digest.count == 32 else {
            throw LedgerError(.invalidInput, "the evidence digest must be 32 bytes (SHA-256)")
        }
    }
}
