import AppleSales
import CZlib
import CivilDates
import Foundation
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

/// Runs `body` with a ledger on a migrated database of its own.
func withSalesLedger<R: Sendable>(
    _ label: String = #function, _ body: (TestDatabase, LedgerStore) async throws -> R
) async throws -> R {
    try await TestGate.ledger.run {
        try await withTestDatabase(label) { db in
            let ledger = LedgerStore(client: db.client)
            for uid in ["alice", "bob", "carol"] {
                _ = try await ledger.register(uid: uid, profile: salesProfile)
            }
            return try await body(db, ledger)
        }
    }
}

let salesProfile = try! UserProfile(json: #"{"nick":"새싹"}"#)

func day(_ text: String) -> CalendarDate { CalendarDate(text)! }

/// A verified production transaction as the Receipts module would hand it over.
func sale(
    _ id: String, item: ItemID, at date: Date, price: Int64?, currency: String = "KRW", storefront: String = "KOR",
    environment: StoreEnvironment = .production, ownership: OwnershipType = .purchased
) -> VerifiedTransaction {
    VerifiedTransaction(
        store: .appStore, environment: environment, transactionId: id, originalTransactionId: id,
        bundleId: "com.memolease.sesac1",
        productId: productId(item), productType: .nonConsumable, purchaseDate: date, originalPurchaseDate: date,
        signedDate: date.addingTimeInterval(2), priceMilli: price, currency: price == nil ? nil : currency,
        storefront: storefront, ownershipType: ownership, appAccountToken: nil,
        evidenceSHA256: fakeDigest("sale/\(environment)/\(id)"))
}

func refund(_ id: String, _ kind: RefundEvent.Kind = .refund, for transactionId: String, at date: Date) -> RefundEvent {
    RefundEvent(
        sourceEventId: id, kind: kind, store: .appStore, environment: .production, transactionId: transactionId,
        signedDate: date, revocationReason: kind == .refund ? 1 : nil, evidenceSHA256: fakeDigest("event/\(id)"))
}

/// Rows of every table the import writes, to prove a refused file stored nothing.
func importedCounts(_ client: PostgresClient) async throws -> [Int] {
    let (reports, rows) = try await client.query(
        "SELECT (SELECT count(*) FROM apple_sales_reports), (SELECT count(*) FROM apple_sales_report_rows)"
    ).single().decode((Int, Int).self)
    return [reports, rows]
}

/// gzip with zlib, as Apple serves its reports.
func gzip(_ bytes: [UInt8]) -> [UInt8] {
    var stream = z_stream()
    precondition(
        deflateInit2_(
            &stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
            Int32(MemoryLayout<z_stream>.size)) == Z_OK)
    defer { deflateEnd(&stream) }
    var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(bytes.count))) + 64)
    var input = bytes
    let produced = input.withUnsafeMutableBufferPointer { source in
        output.withUnsafeMutableBufferPointer { target in
            stream.next_in = source.baseAddress
            stream.avail_in = UInt32(source.count)
            stream.next_out = target.baseAddress
            stream.avail_out = UInt32(target.count)
            precondition(deflate(&stream, Z_FINISH) == Z_STREAM_END)
            return target.count - Int(stream.avail_out)
        }
    }
    return Array(output[0..<produced])
}
