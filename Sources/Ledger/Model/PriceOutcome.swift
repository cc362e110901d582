/// The result of `LedgerStore.recordLearnedPrice(_:)`.
public enum PriceOutcome: Sendable, Hashable {
    /// New: a `price_learned` entry booked this price (and the refund, when the purchase was refunded).
    case recorded(Money)
    /// The purchase carries this price already (recorded with it, or learned before): nothing written.
    case duplicate(Money)
    /// The purchase carries another price: nothing written (and logged).
    case conflict(recorded: Money, stated: Money)
    /// The signed transaction is not the recorded purchase (another product, original transaction or
    /// purchase time): nothing written.
    case evidenceDiffers
    /// A family-shared purchase: the organiser paid, there is no revenue to book. Nothing written.
    case familyShared
    /// No purchase with this transaction id is recorded.
    case notRecorded
}
