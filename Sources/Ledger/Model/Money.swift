/// An amount of money: integer milliunits (1/1000 of the currency's major unit, Apple's unit) and
/// an ISO 4217 currency code. Never floating point. ₩2,500 is `Money(amountMilli: 2_500_000, currency: "KRW")`.
public struct Money: Sendable, Hashable, Codable {
    public var amountMilli: Int64
    public var currency: String

    public init(amountMilli: Int64, currency: String) {
        self.amountMilli = amountMilli
        self.currency = currency
    }
}
