import ArgumentParser
import CivilDates
import Foundation
import Reports
import Seeding

/// `shopledger seed`: fills the database with synthetic purchases and refunds, for benchmarks and demos.
struct SeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed",
        abstract:
            "Fill the database with realistic synthetic purchases and refunds (through COPY), for benchmarks and demos.",
        discussion: """
            Writes the rows the ledger itself writes, so `shopledger reconcile` passes afterwards: users with \
            their free items, purchases (mostly App Store production in KRW, some USD, JPY and EUR; family \
            sharing; sandbox and stub test traffic), refunds days later, some reversed. Never run it against \
            a real shop's database: the data is made up.
            """)

    @Option(help: "How many purchases.")
    var purchases: Int

    @Option(help: "Over how many days (ending on --last-day).")
    var days: Int

    @Option(help: "How many users (default: a third of the purchases).")
    var users: Int?

    @Option(
        name: .customLong("last-day"),
        help: ArgumentHelp("The last seeded day (UTC). Default: yesterday (UTC).", valueName: "YYYY-MM-DD"))
    var lastDay: CalendarDate?

    @Option(help: "Varies the data; seeding twice needs two seeds.")
    var seed: UInt64 = 1

    @Flag(name: .customLong("no-vacuum"), help: "Skip VACUUM (ANALYZE) of the seeded tables afterwards.")
    var noVacuum = false

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        do {
            try configuration().validate()
        } catch let error as SeedError {
            throw ValidationError(error.message)
        }
    }

    func configuration() -> SeedConfiguration {
        SeedConfiguration(
            purchases: purchases, days: days, users: users, lastDay: lastDay ?? Self.yesterdayUTC(), seed: seed)
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    static func yesterdayUTC() -> CalendarDate {
        CalendarDate(daysSinceEpoch: Int((Date().timeIntervalSince1970 / 86_400).rounded(.down)) - 1)!
    }

    func run() async throws {
        let logger = CommandLogging.logger()
        let configuration = configuration()
        try await database.withClient(schema: .requireCurrent, logger: logger) { client in
            let seeder = LedgerSeeder(client: client, invalidating: .reportDays, logger: logger)
            let clock = ContinuousClock()
            let began = clock.now
            let summary = try await seeder.seed(configuration)
            let seeded = clock.now - began
            print(
                "seeded \(summary.purchases) purchases (\(summary.productionPurchases) production, \(summary.familyShared) family-shared), "
                    + "\(summary.refunds) refunds, \(summary.reversals) reversals, \(summary.revokes) family revokes, "
                    + "\(summary.users) users, \(summary.journalEntries) journal entries, \(summary.firstDay) to \(summary.lastDay), "
                    + "in \(Self.seconds(seeded)) s")
            if !noVacuum {
                let vacuumBegan = clock.now
                try await seeder.vacuum()
                print("vacuum analyze: \(Self.seconds(clock.now - vacuumBegan)) s")
            }
        }
    }
}
