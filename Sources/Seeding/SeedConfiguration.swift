import CivilDates

/// What `shopledger seed` makes: `purchases` synthetic purchases over the `days` days ending on
/// `lastDay` (UTC days), by `users` users, with refunds, reversals, family sharing and test traffic
/// in realistic proportions. The same configuration makes the same data.
public struct SeedConfiguration: Sendable, Hashable {
    /// Paid catalog items a user can buy (4 faces and 7 backgrounds); each user buys each at most once.
    public static let paidItemsPerUser = 11

    public var purchases: Int
    public var days: Int
    public var users: Int
    public var lastDay: CalendarDate
    /// Varies the data and names it: uids are `seed<N>-user<M>`, transactions `seed<N>-<M>`.
    public var seed: UInt64
    /// Purchases per COPY batch (one transaction each).
    public var batchSize: Int
    /// Batches written at once, each on its own connection.
    public var parallelBatches = 2

    /// Parts per thousand of each kind of event.
    public var productionPerMille = 955
    public var sandboxPerMille = 35
    public var familySharedPerMille = 20
    public var unpricedPerMille = 2
    public var refundPerMille = 30
    public var reversalPerMilleOfRefunds = 100
    public var revokePerMilleOfShared = 200

    /// `users` defaults to a third of the purchases (at least enough for every purchase to be a
    /// new item for its user).
    public init(
        purchases: Int, days: Int, users: Int? = nil, lastDay: CalendarDate, seed: UInt64 = 1, batchSize: Int = 100_000
    ) {
        self.purchases = purchases
        self.days = days
        self.users = users ?? max(Self.minimumUsers(for: purchases), purchases / 3)
        self.lastDay = lastDay
        self.seed = seed
        self.batchSize = batchSize
    }

    /// Each user buys each paid item at most once (the items are non-consumable).
    public static func minimumUsers(for purchases: Int) -> Int {
        max(1, (purchases + paidItemsPerUser - 1) / paidItemsPerUser)
    }

    public var firstDay: CalendarDate { lastDay.adding(days: 1 - days) }

    public func validate() throws {
        guard (1...100_000_000).contains(purchases) else {
            throw SeedError("--purchases must be between 1 and 100000000")
        }
        guard (1...3660).contains(days) else { throw SeedError("--days must be between 1 and 3660") }
        guard users >= Self.minimumUsers(for: purchases), users <= 100_000_000 else {
            throw SeedError(
                "--users must be between \(Self.minimumUsers(for: purchases)) (each user buys each of the "
                    + "\(Self.paidItemsPerUser) paid items at most once) and 100000000")
        }
        guard lastDay.daysSinceEpoch - days >= 0, lastDay.year < 9000 else {
            throw SeedError("the seeded days must fall between 1970 and 9000")
        }
        guard (1...1_000_000).contains(batchSize) else {
            throw SeedError("the batch size must be between 1 and 1000000")
        }
        guard (1...8).contains(parallelBatches) else {
            throw SeedError("the parallel batches must be between 1 and 8")
        }
    }
}
