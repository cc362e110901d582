import Ledger
import Postgres

/// The ledger rows of one batch of synthetic purchases, streamed table by table through COPY in
/// the order the foreign keys need. Each row is what `LedgerStore.recordPurchase` and
/// `recordRefundEvent` would have written for the same events (see LedgerStore+Purchases.swift and
/// +Refunds.swift); journal entry ids are assigned in batch order from a reserved block. A
/// purchase's own journal entry, postings and grant event are derived from its row (migration
/// 0007): it carries the entry id, and only the later entries are stored.
struct SeedRows {
    let batch: [SyntheticPurchase]
    let items: [LedgerSeeder.PaidItem]
    let names: SeedNames

    /// Store, environment and book of each synthetic book.
    private static func identity(_ book: SyntheticPurchase.Book) -> (store: String, environment: String, book: String) {
        switch book {
        case .production: ("app_store", "Production", LedgerBook.production)
        case .sandbox: ("app_store", "Sandbox", "sandbox")
        case .stub: ("stub", "Stub", "stub")
        }
    }

    /// When the store signed the transaction, and when the ledger recorded it.
    private static func signedAt(_ purchase: SyntheticPurchase) -> Int64 { purchase.purchasedAt + 1_000 }
    private static func recordedAt(_ time: Int64, _ purchase: SyntheticPurchase) -> Int64 {
        time + 1_500 + Int64(purchase.number % 997)
    }

    private func price(_ purchase: SyntheticPurchase) -> (milli: Int64, currency: String)? {
        guard purchase.priced else { return nil }
        let currency = SyntheticLedger.currencies[purchase.currency]
        let tiers = currency.tierPrices
        return (items[purchase.item].priceMilli <= 1_200_000 ? tiers.0 : tiers.1, currency.code)
    }

    /// 32 bytes standing for the SHA-256 of the evidence: distinct per transaction and event.
    private func digest(_ number: Int, _ salt: UInt64) -> [UInt64] {
        var random = SeedRandom(seed: (UInt64(number) &* 0x9E37_79B9 &+ salt) ^ (names.seed &* 0xD6E8_FEB8_6659_FD93))
        return (0..<4).map { _ in random.next() }
    }

    /// The journal entries of a purchase in `seq` order: (kind, effective time, refund event kind).
    private static func entries(_ purchase: SyntheticPurchase) -> [(kind: String, at: Int64, event: String?)] {
        var entries: [(kind: String, at: Int64, event: String?)] = [("purchase", purchase.purchasedAt, nil)]
        if let refundedAt = purchase.refundedAt { entries.append(("refund", refundedAt, "refund")) }
        if let reversedAt = purchase.reversedAt { entries.append(("refund_reversal", reversedAt, "reversal")) }
        if let revokedAt = purchase.revokedAt { entries.append(("family_revoke", revokedAt, "revoke")) }
        return entries
    }

    func copyStoreTransactions(on connection: PostgresConnection) async throws {
        try await connection.copyFrom(
            "COPY store_transactions (store, environment, transaction_id, first_seen_at) FROM STDIN"
        ) { writer in
            var buffer = CopyRowBuffer()
            for purchase in batch {
                let identity = Self.identity(purchase.book)
                buffer.text(identity.store)
                buffer.text(identity.environment)
                buffer.text(names.transactionId(purchase.number))
                buffer.timestamp(milliseconds: Self.recordedAt(purchase.purchasedAt, purchase))
                try await buffer.endRow(to: writer)
            }
            try await buffer.flush(to: writer)
        }
    }

    func copyPurchases(firstEntryId: Int64, on connection: PostgresConnection) async throws {
        try await connection.copyFrom(
            """
            COPY purchases (store, environment, transaction_id, original_transaction_id, uid, product_id, item_kind,
                item_index, book, purchased_at, price_milli, currency, storefront, ownership, signed_at, evidence_sha256,
                recorded_at, entry_id) FROM STDIN
            """
        ) { writer in
            var buffer = CopyRowBuffer()
            var entryId = firstEntryId
            for purchase in batch {
                defer { entryId += Int64(Self.entries(purchase).count) }
                let identity = Self.identity(purchase.book)
                let item = items[purchase.item]
                let transactionId = names.transactionId(purchase.number)
                buffer.text(identity.store)
                buffer.text(identity.environment)
                buffer.text(transactionId)
                buffer.text(transactionId)
                buffer.text(names.uid(purchase.user))
                buffer.text(item.productId)
                buffer.text(item.item.kind.rawValue)
                buffer.int(item.item.index)
                buffer.text(identity.book)
                buffer.timestamp(milliseconds: purchase.purchasedAt)
                if let price = price(purchase) {
                    buffer.int(price.milli)
                    buffer.text(price.currency)
                } else {
                    buffer.null()
                    buffer.null()
                }
                buffer.text(SyntheticLedger.currencies[purchase.currency].storefront)
                buffer.text(purchase.familyShared ? "FAMILY_SHARED" : "PURCHASED")
                buffer.timestamp(milliseconds: Self.signedAt(purchase))
                buffer.bytea(digest(purchase.number, 1))
                buffer.timestamp(milliseconds: Self.recordedAt(purchase.purchasedAt, purchase))
                buffer.int(entryId)
                try await buffer.endRow(to: writer)
            }
            try await buffer.flush(to: writer)
        }
    }

    func copyRefundEvents(on connection: PostgresConnection) async throws {
        try await connection.copyFrom(
            """
            COPY refund_events (source_event_id, kind, store, environment, transaction_id, signed_at, revocation_reason,
                evidence_sha256, received_at) FROM STDIN
            """
        ) { writer in
            var buffer = CopyRowBuffer()
            for purchase in batch {
                let identity = Self.identity(purchase.book)
                for (salt, entry) in Self.entries(purchase).enumerated().dropFirst() {
                    buffer.text(names.eventId(purchase.number, entry.event!))
                    buffer.text(entry.kind)
                    buffer.text(identity.store)
                    buffer.text(identity.environment)
                    buffer.text(names.transactionId(purchase.number))
                    buffer.timestamp(milliseconds: entry.at)
                    if entry.kind == "refund" { buffer.int(purchase.refundReason) } else { buffer.null() }
                    buffer.bytea(digest(purchase.number, UInt64(salt) + 10))
                    buffer.timestamp(milliseconds: entry.at + 1_000)
                    try await buffer.endRow(to: writer)
                }
            }
            try await buffer.flush(to: writer)
        }
    }

    func copyJournalEntries(firstEntryId: Int64, on connection: PostgresConnection) async throws {
        try await connection.copyFrom(
            """
            COPY journal_entry_rows (entry_id, store, environment, transaction_id, seq, kind, uid, book, refund_event_id,
                effective_at, recorded_at) FROM STDIN
            """
        ) { writer in
            var buffer = CopyRowBuffer()
            var entryId = firstEntryId
            for purchase in batch {
                let identity = Self.identity(purchase.book)
                for (seq, entry) in Self.entries(purchase).enumerated() {
                    defer { entryId += 1 }
                    // The purchase's own entry (seq 0) is derived from its row.
                    guard seq > 0 else { continue }
                    buffer.int(entryId)
                    buffer.text(identity.store)
                    buffer.text(identity.environment)
                    buffer.text(names.transactionId(purchase.number))
                    buffer.int(seq)
                    buffer.text(entry.kind)
                    buffer.text(names.uid(purchase.user))
                    buffer.text(identity.book)
                    if let event = entry.event {
                        buffer.text(names.eventId(purchase.number, event))
                    } else {
                        buffer.null()
                    }
                    buffer.timestamp(milliseconds: entry.at)
                    buffer.timestamp(milliseconds: Self.recordedAt(entry.at, purchase))
                    try await buffer.endRow(to: writer)
                }
            }
            try await buffer.flush(to: writer)
        }
    }

    /// A bought, priced purchase debits receivable and credits revenue; a refund debits refunds
    /// and credits receivable; a reversal the opposite. Family-shared and unpriced: no postings.
    func copyPostings(firstEntryId: Int64, on connection: PostgresConnection) async throws {
        try await connection.copyFrom(
            "COPY posting_rows (transaction_id, entry_id, leg, account, currency, amount_milli) FROM STDIN"
        ) { writer in
            var buffer = CopyRowBuffer()
            var entryId = firstEntryId
            for purchase in batch {
                let entries = Self.entries(purchase)
                defer { entryId += Int64(entries.count) }
                guard !purchase.familyShared, let price = price(purchase), price.milli > 0 else { continue }
                let identity = Self.identity(purchase.book)
                let kind = items[purchase.item].item.kind.rawValue
                let receivable = LedgerBook.account("receivable:\(identity.store)", book: identity.book)
                // The purchase's own postings (offset 0) are derived from its row.
                for (offset, entry) in entries.enumerated().dropFirst() {
                    let (counterAccount, sign): (String, Int64) =
                        switch entry.kind {
                        case "refund": (LedgerBook.account("refunds:\(kind)", book: identity.book), -1)
                        default: (LedgerBook.account("refunds:\(kind)", book: identity.book), 1)
                        }
                    for (leg, account, amount) in [
                        (1, receivable, sign * price.milli), (2, counterAccount, -sign * price.milli),
                    ] {
                        buffer.text(names.transactionId(purchase.number))
                        buffer.int(entryId + Int64(offset))
                        buffer.int(leg)
                        buffer.text(account)
                        buffer.text(price.currency)
                        buffer.int(amount)
                        try await buffer.endRow(to: writer)
                    }
                }
            }
            try await buffer.flush(to: writer)
        }
    }

    /// Each (user, item) is bought once, so each purchase has its own grant row, counting it while live.
    func copyGrants(on connection: PostgresConnection) async throws {
        try await connection.copyFrom(
            "COPY grants (uid, item_kind, item_index, free, purchased_count, shared_count, updated_at) FROM STDIN"
        ) { writer in
            var buffer = CopyRowBuffer()
            for purchase in batch {
                let item = items[purchase.item].item
                buffer.text(names.uid(purchase.user))
                buffer.text(item.kind.rawValue)
                buffer.int(item.index)
                buffer.text("f")
                buffer.int(!purchase.familyShared && purchase.isLive ? 1 : 0)
                buffer.int(purchase.familyShared && purchase.isLive ? 1 : 0)
                buffer.timestamp(milliseconds: Self.recordedAt(Self.entries(purchase).last!.at, purchase))
                try await buffer.endRow(to: writer)
            }
            try await buffer.flush(to: writer)
        }
    }

    func copyGrantEvents(firstEntryId: Int64, on connection: PostgresConnection) async throws {
        try await connection.copyFrom(
            """
            COPY grant_event_rows (uid, item_kind, item_index, source, delta, cause, store, environment, transaction_id,
                entry_id, recorded_at) FROM STDIN
            """
        ) { writer in
            var buffer = CopyRowBuffer()
            var entryId = firstEntryId
            for purchase in batch {
                let identity = Self.identity(purchase.book)
                let item = items[purchase.item].item
                for entry in Self.entries(purchase) {
                    defer { entryId += 1 }
                    // The purchase's own grant event is derived from its row.
                    guard entry.kind != "purchase" else { continue }
                    let delta = entry.kind == "purchase" || entry.kind == "refund_reversal" ? 1 : -1
                    buffer.text(names.uid(purchase.user))
                    buffer.text(item.kind.rawValue)
                    buffer.int(item.index)
                    buffer.text(purchase.familyShared ? "family_shared" : "purchased")
                    buffer.int(delta)
                    buffer.text(entry.kind)
                    buffer.text(identity.store)
                    buffer.text(identity.environment)
                    buffer.text(names.transactionId(purchase.number))
                    buffer.int(entryId)
                    buffer.timestamp(milliseconds: Self.recordedAt(entry.at, purchase))
                    try await buffer.endRow(to: writer)
                }
            }
            try await buffer.flush(to: writer)
        }
    }
}
