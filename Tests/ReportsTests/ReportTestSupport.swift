import CSV
import CivilDates
import Foundation
import Ledger
import Logging
import Postgres
import Receipts
import Reports
import TestSupport
import Testing

/// Runs `body` with a ledger on a database of its own, then checks every ledger invariant and the
/// report totals check over all of history.
func withReportLedger<R: Sendable>(
    _ label: String = #function,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (TestDatabase, LedgerStore) async throws -> R
) async throws -> R {
    try await withReconciledLedger(
        label, checks: ReconciliationChecks.all, sourceLocation: sourceLocation, body)
}

/// A fresh temporary folder for report files, removed afterwards.
func withTemporaryFolder<R>(_ body: (String) async throws -> R) async throws -> R {
    let folder = NSTemporaryDirectory() + "shopledger-reports-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    return try await body(folder)
}

let testProfile = try! UserProfile(json: #"{"nick":"새싹"}"#)

func day(_ text: String) -> CalendarDate { CalendarDate(text)! }

/// A verified transaction as the Receipts module would hand it over.
func transaction(
    _ id: String, item: ItemID, at date: Date, price: Int64?, currency: String = "KRW",
    store: VerifiedTransaction.Store = .appStore, environment: StoreEnvironment = .production,
    ownership: OwnershipType = .purchased, storefront: String? = "KOR"
) -> VerifiedTransaction {
    VerifiedTransaction(
        store: store, environment: environment, transactionId: id, originalTransactionId: id,
        bundleId: "com.memolease.sesac1",
        productId: productId(item), productType: .nonConsumable, purchaseDate: date, originalPurchaseDate: date,
        signedDate: date.addingTimeInterval(2), priceMilli: price, currency: price == nil ? nil : currency,
        storefront: storefront,
        ownershipType: ownership, appAccountToken: nil, evidenceSHA256: fakeDigest("\(store)/\(environment)/\(id)"))
}

func refundEvent(
    _ id: String, _ kind: RefundEvent.Kind, for transactionId: String, at date: Date,
    store: VerifiedTransaction.Store = .appStore, environment: StoreEnvironment = .production
) -> RefundEvent {
    RefundEvent(
        sourceEventId: id, kind: kind, store: store, environment: environment, transactionId: transactionId,
        signedDate: date,
        revocationReason: kind == .refund ? 1 : nil, evidenceSHA256: fakeDigest("event/\(id)"))
}

/// A report written to `folder`, read back: the CSV bytes and rows, the Markdown text.
struct WrittenReport {
    let csvBytes: [UInt8]
    let markdownBytes: [UInt8]
    let rows: [[String: String]]
    let header: [String]

    var markdown: String { String(decoding: markdownBytes, as: UTF8.self) }

    /// The rows of `level` for production (or `book`).
    func rows(level: String, book: String = "production") -> [[String: String]] {
        rows.filter { $0["level"] == level && $0["book"] == book && $0["currency"] != "" }
    }

    /// The one row matching `fields`.
    func row(_ fields: [String: String]) -> [String: String]? {
        let matches = rows.filter { row in fields.allSatisfy { row[$0.key] == $0.value } }
        #expect(matches.count <= 1, "\(matches.count) rows match \(fields)")
        return matches.first
    }
}

/// Writes `report` as CSV and Markdown under `folder` and reads both back, the CSV with a real
/// RFC 4180 parser (CSV.swift).
func writeAndRead(_ report: RevenueReport, to folder: String) throws -> WrittenReport {
    let paths = try ReportWriter(outputDirectory: folder).write(report, formats: [.csv, .md])
    #expect(paths == ["\(folder)/\(report.folderName)/revenue.csv", "\(folder)/\(report.folderName)/revenue.md"])
    let csv = try Data(contentsOf: URL(fileURLWithPath: paths[0]))
    let markdown = try Data(contentsOf: URL(fileURLWithPath: paths[1]))
    let reader = try CSVReader(stream: InputStream(data: csv), codecType: UTF8.self, hasHeaderRow: true)
    let header = reader.headerRow ?? []
    var rows: [[String: String]] = []
    while let fields = reader.next() {
        #expect(fields.count == header.count, "a row of \(fields.count) fields under \(header.count) headers")
        rows.append(Dictionary(uniqueKeysWithValues: zip(header, fields)))
    }
    if let error = reader.error { Issue.record("CSV parse error: \(error)") }
    return WrittenReport(csvBytes: Array(csv), markdownBytes: Array(markdown), rows: rows, header: header)
}

/// A decimal amount of a CSV field in milliunits ("0.99" → 990, "-2500" → -2500000).
func milli(_ text: String?) -> Int64? {
    guard let text, let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { return nil }
    var scaled = value * 1000
    var rounded = Decimal()
    NSDecimalRound(&rounded, &scaled, 0, .plain)
    guard rounded == scaled else { return nil }
    return Int64(truncating: NSDecimalNumber(decimal: rounded))
}
