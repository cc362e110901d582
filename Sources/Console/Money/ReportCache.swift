import Crypto
import Foundation
import Reports

/// The money pages' reports, made once and served again for a short while: a month's report reads a
/// month of the ledger, and finance opens the same report, its CSV and the next page within a minute.
///
/// Each entry lives ``lifetime`` (60 seconds): a report of a day that is not over yet, or of a past
/// day a late refund or receipt still changes, is never served older than that. At most ``capacity``
/// reports and ``maximumBytes`` of their HTML are kept (a month's document is a few megabytes); the
/// oldest goes first, and the newest is always kept. Concurrent first requests for one report may
/// each make it (the last one stays); nothing waits on another request.
actor ReportCache {
    /// A made report and its HTML document, with the hash its inline style sheet is allowed by.
    struct Entry: Sendable {
        let report: RevenueReport
        let html: String
        /// `'sha256-…'`: the Content-Security-Policy source of the document's `<style>`.
        let styleSource: String
        let madeAt: Date
    }

    let capacity: Int
    let maximumBytes: Int
    let lifetime: TimeInterval
    let clock: @Sendable () -> Date
    private var entries: [ReportRequest: Entry] = [:]

    init(
        capacity: Int = 32, maximumBytes: Int = 64 << 20, lifetime: TimeInterval = 60,
        clock: @escaping @Sendable () -> Date
    ) {
        self.capacity = max(1, capacity)
        self.maximumBytes = maximumBytes
        self.lifetime = lifetime
        self.clock = clock
    }

    /// The cached report of `request`, or the one `make` makes now (then kept).
    func entry(
        for request: ReportRequest, make: @Sendable () async throws -> RevenueReport
    ) async throws -> Entry {
        let now = clock()
        if let entry = entries[request], now.timeIntervalSince(entry.madeAt) < lifetime, entry.madeAt <= now {
            return entry
        }
        let report = try await make()
        let html = RevenueHTML.render(report)
        let entry = Entry(report: report, html: html, styleSource: Self.styleSource(of: html), madeAt: clock())
        store(entry, for: request)
        return entry
    }

    /// How many reports are kept now (for tests).
    var count: Int { entries.count }

    private func store(_ entry: Entry, for request: ReportRequest) {
        let now = clock()
        entries = entries.filter { now.timeIntervalSince($0.value.madeAt) < lifetime }
        while entries.count >= capacity, entries[request] == nil,
            let oldest = entries.min(by: { $0.value.madeAt < $1.value.madeAt })?.key
        {
            entries[oldest] = nil
        }
        entries[request] = entry
        var bytes = entries.values.reduce(0) { $0 + $1.html.utf8.count }
        while bytes > maximumBytes,
            let oldest = entries.filter({ $0.key != request }).min(by: { $0.value.madeAt < $1.value.madeAt })
        {
            bytes -= oldest.value.html.utf8.count
            entries[oldest.key] = nil
        }
    }

    /// `'sha256-<base64>'` of the text of the document's first `<style>` element (CSP Level 2 hashes the
    /// element's text exactly as written).
    static func styleSource(of html: String) -> String {
        guard let open = html.range(of: "<style>"),
            let close = html.range(of: "</style>", range: open.upperBound..<html.endIndex)
        else { return "'none'" }
        let digest = SHA256.hash(data: Data(html[open.upperBound..<close.lowerBound].utf8))
        return "'sha256-\(Data(digest).base64EncodedString())'"
    }
}
