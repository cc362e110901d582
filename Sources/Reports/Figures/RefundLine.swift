import Ledger

/// One production refund or refund reversal, as the daily report lists them.
public struct RefundLine: Sendable, Hashable {
    /// When the store processed it, `YYYY-MM-DD HH:MM:SS` in the report's time zone.
    public let localTime: String
    public let isReversal: Bool
    public let transactionId: String
    public let item: ItemID
    public let amount: Money
    /// The day of the original purchase in the report's time zone.
    public let purchasedOn: String
    /// Apple's revocation reason (0: other, 1: an issue with the app), when the store gave one.
    public let revocationReason: Int?
}
