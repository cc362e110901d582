/// The revenue figures of one report line (an item, a kind or a whole currency, in one period and
/// book). Amounts are integer milliunits of the line's currency.
///
/// Purchases count on the day they were made; refunds and refund reversals on the day the store
/// processed them (their journal entry's `effective_at`), so a refund of last week's purchase
/// lowers today's net revenue, as in Apple's daily sales reports.
public struct RevenueFigures: Sendable, Hashable {
    /// Units bought (production: App Store Production, bought by the user, priced).
    public var purchases = 0
    /// What those units cost the buyers (tax included where the store collects it).
    public var grossMilli: Int64 = 0
    /// Units refunded in the period, whenever they were bought.
    public var refunds = 0
    public var refundedMilli: Int64 = 0
    /// Refunds the store took back (REFUND_REVERSED) in the period: they restore revenue.
    public var reversals = 0
    public var reversedMilli: Int64 = 0
    /// Estimated store commission on the net units, each unit's commission rounded to the minor unit.
    public var commissionMilli: Int64 = 0
    /// Distinct users who bought (not additive: totals are counted, never summed).
    public var buyers = 0
    /// Of those, users whose first purchase in this book ever was in this period.
    public var firstTimeBuyers = 0

    public init() {}

    /// Gross minus refunds plus reversed refunds.
    public var netMilli: Int64 { grossMilli - refundedMilli + reversedMilli }
    /// Net revenue minus the estimated commission (taxes are not estimated).
    public var proceedsMilli: Int64 { netMilli - commissionMilli }

    /// Whether anything happened on this line.
    public var isEmpty: Bool { purchases == 0 && refunds == 0 && reversals == 0 && buyers == 0 }

    /// Adds the additive figures (units and amounts) of `other`; buyers are left alone.
    /// Adds `other`'s units and amounts; fails instead of trapping when an amount overflows Int64.
    mutating func addAmounts(of other: RevenueFigures) throws(ReportError) {
        purchases += other.purchases
        grossMilli = try Self.sum(grossMilli, other.grossMilli)
        refunds += other.refunds
        refundedMilli = try Self.sum(refundedMilli, other.refundedMilli)
        reversals += other.reversals
        reversedMilli = try Self.sum(reversedMilli, other.reversedMilli)
        commissionMilli = try Self.sum(commissionMilli, other.commissionMilli)
    }

    static func sum(_ a: Int64, _ b: Int64) throws(ReportError) -> Int64 {
        let (value, overflow) = a.addingReportingOverflow(b)
        guard !overflow else { throw overflowError }
        return value
    }

    static func product(_ a: Int64, _ b: Int64) throws(ReportError) -> Int64 {
        let (value, overflow) = a.multipliedReportingOverflow(by: b)
        guard !overflow else { throw overflowError }
        return value
    }

    static var overflowError: ReportError {
        ReportError(
            .overflow,
            "a report figure overflows 64-bit milliunits (over 9.2 quadrillion units of a currency): the ledger holds "
                + "prices no store sends; check the purchases' prices")
    }
}

/// Items granted without revenue in a period: family-shared purchases (the family organiser paid;
/// Apple reports them as grants, RevenueCat excludes them) and purchases the store sent no price for.
public struct GrantFigures: Sendable, Hashable {
    public var familyShared = 0
    public var familyRevokes = 0
    public var unpriced = 0
    /// Book `promotional`: items support granted as compensation, and such grants revoked.
    public var supportGrants = 0
    public var supportRevokes = 0

    public init() {}

    public var isEmpty: Bool {
        familyShared == 0 && familyRevokes == 0 && unpriced == 0 && supportGrants == 0 && supportRevokes == 0
    }
}
