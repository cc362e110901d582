import CivilDates

/// Generates realistic purchases day by day: more each day (a growing shop), more at weekends and
/// in Korean evenings, mostly KRW with some USD, JPY and EUR, the cheaper items more often, a few
/// percent refunded days later (some reversed), family sharing, and sandbox and stub test traffic.
/// Deterministic for a configuration.
struct SyntheticLedger {
    struct Currency {
        let code: String
        let storefront: String
        /// Prices of the cheaper (₩1,200) and dearer (₩2,500) tier, in milliunits.
        let tierPrices: (Int64, Int64)
    }

    static let currencies = [
        Currency(code: "KRW", storefront: "KOR", tierPrices: (1_200_000, 2_500_000)),
        Currency(code: "USD", storefront: "USA", tierPrices: (990, 1_990)),
        Currency(code: "JPY", storefront: "JPN", tierPrices: (160_000, 300_000)),
        Currency(code: "EUR", storefront: "DEU", tierPrices: (990, 1_990)),
    ]
    /// KRW 85%, USD 8%, JPY 4%, EUR 3%.
    static let currencyWeights = cumulative([850, 80, 40, 30])
    /// Purchases per UTC hour, shaped by the Korean day (UTC+9): quiet nights, busy evenings.
    static let hourWeights: [Int] = {
        let koreanHours = [2, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 5, 6, 6, 5, 5, 5, 6, 7, 8, 9, 10, 9, 6]
        return cumulative((0..<24).map { koreanHours[($0 + 9) % 24] })
    }()

    let configuration: SeedConfiguration
    let itemCount: Int
    let itemWeights: [Int]
    private var random: SeedRandom
    /// Which (user, item) pairs are bought already: each user buys each item at most once.
    private var owned: [UInt64]
    private var nextNumber = 0
    private let windowEnd: Int64

    /// `itemTiers[i]` is 0 for the cheaper tier, 1 for the dearer; cheaper items sell twice as often.
    init(configuration: SeedConfiguration, itemTiers: [Int]) {
        self.configuration = configuration
        self.itemCount = itemTiers.count
        self.itemWeights = Self.cumulative(itemTiers.map { $0 == 0 ? 2 : 1 })
        self.random = SeedRandom(seed: configuration.seed &* 0x2545_F491_4F6C_DD1D &+ 1)
        self.owned = [UInt64](repeating: 0, count: (configuration.users * itemTiers.count + 63) / 64)
        self.windowEnd = Int64(configuration.lastDay.adding(days: 1).daysSinceEpoch) * 86_400_000
    }

    /// How many purchases each day gets: proportional to (days + day number), 30% more at weekends.
    func purchasesPerDay() -> [Int] {
        let days = configuration.days
        let weights = (0..<days).map { offset -> Int in
            let weekday = configuration.firstDay.adding(days: offset).isoWeekday
            return (days + offset) * (weekday >= 6 ? 13 : 10)
        }
        let total = weights.reduce(0, +)
        var counts = weights.map { configuration.purchases * $0 / total }
        var remainder = configuration.purchases - counts.reduce(0, +)
        var index = counts.count - 1
        while remainder > 0 {
            counts[index] += 1
            remainder -= 1
            index = index == 0 ? counts.count - 1 : index - 1
        }
        return counts
    }

    /// The purchases of day `offset` (0 is the first day), in time order.
    mutating func purchases(onDay offset: Int, count: Int) -> [SyntheticPurchase] {
        let dayStart = Int64(configuration.firstDay.adding(days: offset).daysSinceEpoch) * 86_400_000
        var times = (0..<count).map { _ -> Int64 in
            let hour = Int64(random.weighted(Self.hourWeights))
            return dayStart + hour * 3_600_000 + Int64.random(in: 0..<3_600_000, using: &random)
        }
        times.sort()
        return times.map { makePurchase(at: $0) }
    }

    private mutating func makePurchase(at time: Int64) -> SyntheticPurchase {
        let roll = Int.random(in: 0..<1000, using: &random)
        let book: SyntheticPurchase.Book =
            roll < configuration.productionPerMille
            ? .production : roll < configuration.productionPerMille + configuration.sandboxPerMille ? .sandbox : .stub
        let (user, item) = pickUserAndItem()
        let familyShared = book == .production && random.chance(perMille: configuration.familySharedPerMille)
        let currency = book == .stub ? 0 : random.weighted(Self.currencyWeights)
        let priced = !random.chance(perMille: configuration.unpricedPerMille)
        var refundedAt: Int64?
        var reversedAt: Int64?
        var revokedAt: Int64?
        if familyShared {
            if random.chance(perMille: configuration.revokePerMilleOfShared) {
                revokedAt = happened(time + Int64.random(in: 86_400_000..<60 * 86_400_000, using: &random))
            }
        } else if random.chance(perMille: configuration.refundPerMille) {
            // Most refunds come within days, a few weeks later: the product of two uniforms leans early.
            let a = Int64.random(in: 0..<1000, using: &random)
            let b = Int64.random(in: 0..<1000, using: &random)
            refundedAt = happened(time + 3_600_000 + a * b * 30 * 86_400 / 1000)
            if let refundedAt, random.chance(perMille: configuration.reversalPerMilleOfRefunds) {
                reversedAt = happened(refundedAt + Int64.random(in: 86_400_000..<14 * 86_400_000, using: &random))
            }
        }
        nextNumber += 1
        return SyntheticPurchase(
            number: nextNumber - 1, user: user, item: item, book: book, currency: currency, priced: priced,
            familyShared: familyShared, purchasedAt: time, refundedAt: refundedAt, reversedAt: reversedAt,
            refundReason: random.chance(perMille: 100) ? 1 : 0, revokedAt: revokedAt)
    }

    /// Events after the last seeded day have not happened yet.
    private func happened(_ time: Int64) -> Int64? { time < windowEnd ? time : nil }

    /// A random user and item the user has not bought: another item of the same user if that one
    /// is taken, the next user if all are (the configuration guarantees room).
    private mutating func pickUserAndItem() -> (Int, Int) {
        var user = Int.random(in: 0..<configuration.users, using: &random)
        let first = random.weighted(itemWeights)
        while true {
            for step in 0..<itemCount {
                let item = (first + step) % itemCount
                let bit = user * itemCount + item
                if owned[bit / 64] & (1 << UInt64(bit % 64)) == 0 {
                    owned[bit / 64] |= 1 << UInt64(bit % 64)
                    return (user, item)
                }
            }
            user = (user + 1) % configuration.users
        }
    }

    static func cumulative(_ weights: [Int]) -> [Int] {
        var total = 0
        return weights.map { weight in
            total += weight
            return total
        }
    }
}
