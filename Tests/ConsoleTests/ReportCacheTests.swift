import CivilDates
import Foundation
import Reports
import TestSupport
import Testing

@testable import Console

/// The money pages' report cache: a report is made once per request within its lifetime, at most
/// `capacity` are kept (the oldest goes first), and none is served past its lifetime.
@Suite struct ReportCacheTests {
    final class Made: @unchecked Sendable {
        // Guarded by `lock`: the cache's `make` closures run on the cache's executor, the test reads.
        private let lock = NSLock()
        private var requests: [String] = []
        func add(_ request: String) { lock.withLock { requests.append(request) } }
        var all: [String] { lock.withLock { requests } }
    }

    @Test func reportsAreKeptForTheirLifetimeAndTheOldestGoesFirst() async throws {
        try await withTestDatabase { db in
            let clock = ConsoleTestClock()
            let cache = ReportCache(capacity: 2, lifetime: 60, clock: { clock.now })
            let reporter = RevenueReporter(client: db.client)
            let made = Made()
            func request(_ day: String) -> ReportRequest {
                ReportRequest(kind: .daily(CalendarDate(day)!), timeZone: "UTC")
            }
            func open(_ day: String) async throws -> ReportCache.Entry {
                let wanted = request(day)
                return try await cache.entry(for: wanted) {
                    made.add(day)
                    return try await wanted.make(with: reporter)
                }
            }
            let first = try await open("2025-03-01")
            clock.advance(1)
            _ = try await open("2025-03-01")
            #expect(made.all == ["2025-03-01"])
            _ = try await open("2025-03-02")
            clock.advance(1)
            _ = try await open("2025-03-03")
            #expect(await cache.count == 2)
            // 03-01 was the oldest, so it went; 03-03 is still kept.
            _ = try await open("2025-03-03")
            _ = try await open("2025-03-01")
            #expect(made.all == ["2025-03-01", "2025-03-02", "2025-03-03", "2025-03-01"])
            // Past its lifetime a report is made again.
            clock.advance(60)
            _ = try await open("2025-03-01")
            #expect(made.all.count == 5)
            #expect(first.html == RevenueHTML.render(first.report))

            // Past the byte budget the oldest go, however few; the newest stays even alone over it.
            let small = ReportCache(capacity: 10, maximumBytes: first.html.utf8.count + 1, lifetime: 60) { clock.now }
            for day in ["2025-03-01", "2025-03-02"] {
                let wanted = request(day)
                _ = try await small.entry(for: wanted) { try await wanted.make(with: reporter) }
                clock.advance(1)
            }
            #expect(await small.count == 1)
            #expect(first.styleSource.hasPrefix("'sha256-") && first.styleSource.count == 53)
        }
    }
}
