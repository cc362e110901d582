/// One generated purchase and what happens to it later, in milliseconds since 1970 (UTC).
struct SyntheticPurchase: Sendable {
    enum Book: UInt8, Sendable {
        case production
        case sandbox
        case stub
    }

    /// Global sequence number: names the transaction.
    let number: Int
    let user: Int
    /// Index into the seeder's paid catalog items.
    let item: Int
    let book: Book
    /// Index into `SyntheticLedger.currencies`.
    let currency: Int
    let priced: Bool
    let familyShared: Bool
    let purchasedAt: Int64
    /// A refund processed at this time (bought purchases only).
    let refundedAt: Int64?
    /// The refund reversed at this time (only after a refund).
    let reversedAt: Int64?
    /// Apple's revocation reason of the refund (0 other, 1 app issue).
    let refundReason: Int
    /// Family sharing revoked at this time (family-shared purchases only).
    let revokedAt: Int64?

    /// Whether the user still owns the item through this purchase at the end.
    var isLive: Bool {
        if familyShared { return revokedAt == nil }
        return refundedAt == nil || reversedAt != nil
    }

    /// Journal entries it makes: the purchase, then a refund and a reversal, or a revoke.
    var journalEntryCount: Int {
        1 + (refundedAt == nil ? 0 : 1) + (reversedAt == nil ? 0 : 1) + (revokedAt == nil ? 0 : 1)
    }
}

/// SplitMix64: small, fast, and the same sequence for the same seed everywhere.
struct SeedRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// True `perMille` times in a thousand.
    mutating func chance(perMille: Int) -> Bool { Int.random(in: 0..<1000, using: &self) < perMille }

    /// An index drawn with the given weights.
    mutating func weighted(_ cumulative: [Int]) -> Int {
        let roll = Int.random(in: 0..<cumulative.last!, using: &self)
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] > roll { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
