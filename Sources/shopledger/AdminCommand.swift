import APIViews
import ArgumentParser
import Foundation
import Ledger
import Postgres
import Receipts
import Reports

/// `shopledger admin`: support actions straight on the database (the same as
/// `/api/v1/admin/...`, for operators with database access): grant an item as compensation,
/// revoke such a grant, look a purchase up with its whole history, show a user's history.
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Support actions: grant or revoke a compensation item, look purchases up.",
        subcommands: [
            AdminGrantCommand.self, AdminRevokeCommand.self, AdminLookupCommand.self, AdminHistoryCommand.self,
        ])
}

/// Who acts and why, for the commands that write.
struct SupportActorOptions: ParsableArguments {
    @Option(help: "Who does this (recorded with the action), e.g. your name or support handle.")
    var actor: String

    @Option(help: "Why (recorded with the action; required).")
    var reason: String
}

struct AdminGrantCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grant", abstract: "Grant an item to a user as compensation (owned, never revenue).")

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var who: SupportActorOptions

    @Argument(help: "The user's uid.") var uid: String
    @Argument(help: "face or background.") var kind: String
    @Argument(help: "The item's index in the catalog.") var index: Int

    @Option(name: .customLong("transaction"), help: "The purchase the compensation is about.")
    var transactionId: String?

    func run() async throws {
        guard let kind = ItemKind(rawValue: kind) else { throw ValidationError("kind must be face or background") }
        let request = SupportRequest(actor: who.actor, reason: who.reason, transactionId: transactionId)
        let action = try await database.withClient(schema: .requireCurrent) { client in
            try await LedgerStore(client: client).grantCompensation(ItemID(kind: kind, index: index), to: uid, request)
        }
        print(SupportText.action(action))
    }
}

struct AdminRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Take back a compensation grant by its action id.")

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var who: SupportActorOptions

    @Argument(help: "The grant's action id (as `grant` or `history` print it).") var grantId: Int64

    func run() async throws {
        let request = SupportRequest(actor: who.actor, reason: who.reason)
        let action = try await database.withClient(schema: .requireCurrent) { client in
            try await LedgerStore(client: client).revokeCompensation(grantId, request)
        }
        print(SupportText.action(action))
    }
}

struct AdminLookupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup",
        abstract: "The purchases with a transaction id or original transaction id, with their whole history.")

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @Argument(help: "A transaction id or original transaction id.") var id: String

    @Flag(
        help:
            "Print the purchases as JSON, as GET /api/v1/admin/purchases/{id} answers (an empty list, and exit status 1, when none matches)."
    )
    var json = false

    func run() async throws {
        let records = try await database.withClient(schema: .requireCurrent) { client in
            try await LedgerStore(client: client).lookUpPurchases(id)
        }
        // A script gets JSON it can parse either way; the exit status still says whether anything matched.
        if json { try JSONOutput.view(PurchaseLookupView(id: id, records: records)) }
        guard !records.isEmpty else {
            FileHandle.standardError.write(
                Data("no purchase has transaction id or original transaction id \(id)\n".utf8))
            throw ExitCode(1)
        }
        if !json { print(records.map(SupportText.record).joined(separator: "\n")) }
    }
}

struct AdminHistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "A user's purchases with their histories, and every support action.")

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @Argument(help: "The user's uid.") var uid: String

    @Flag(help: "Print the purchases and support actions as JSON, as GET /api/v1/admin/users/{uid}/history answers.")
    var json = false

    func run() async throws {
        let (records, actions) = try await database.withClient(schema: .requireCurrent) { client in
            let ledger = LedgerStore(client: client)
            return (try await ledger.purchaseRecords(of: uid), try await ledger.supportActions(of: uid))
        }
        if json {
            try JSONOutput.view(UserHistoryView(uid: uid, records: records, supportActions: actions))
            return
        }
        var lines = ["user \(uid): \(records.count) purchase(s), \(actions.count) support action(s)"]
        lines += records.map(SupportText.record)
        lines += actions.map(SupportText.action)
        print(lines.joined(separator: "\n"))
    }
}

/// Plain-text lines for the admin commands.
enum SupportText {
    static func time(_ date: Date) -> String {
        date.formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: false).timeZone(separator: .omitted))
    }

    static func action(_ action: SupportAction) -> String {
        var line =
            "\(action.kind.rawValue) #\(action.actionId) \(action.item) for \(action.uid) by \(action.actor) "
            + "at \(time(action.actedAt)): \(action.reason)"
        if let revokes = action.revokes { line += " (revokes #\(revokes))" }
        if let revokedBy = action.revokedBy { line += " (revoked by #\(revokedBy))" }
        if let transactionId = action.transactionId { line += " [transaction \(transactionId)]" }
        return line
    }

    static func record(_ record: PurchaseRecord) -> String {
        let purchase = record.purchase
        var lines = [
            "purchase \(purchase.store.rawValue)/\(purchase.environment.rawValue)/\(purchase.transactionId) "
                + "(original \(purchase.originalTransactionId)) of \(purchase.item) by \(purchase.uid), "
                + "\(purchase.price.map { "\(CurrencyFormat.amount($0.amountMilli, currency: $0.currency)) \($0.currency)" } ?? "no price"), "
                + "\(purchase.ownershipType.rawValue), now \(purchase.state.rawValue)"
        ]
        lines += record.entries.map {
            "  entry #\($0.entryId) seq \($0.seq) \($0.kind.rawValue) effective \(time($0.effectiveAt))"
                + ($0.refundEventId.map { " (event \($0))" } ?? "")
        }
        lines += record.storeEvents.map {
            "  store event \($0.sourceEventId) \($0.kind) signed \(time($0.signedAt))"
                + ($0.revocationReason.map { " reason \($0)" } ?? "")
        }
        lines += record.grantChanges.map {
            "  grant \($0.delta > 0 ? "+" : "")\($0.delta) (\($0.cause)) at \(time($0.recordedAt))"
        }
        lines += record.supportActions.map { "  " + action($0) }
        return lines.joined(separator: "\n")
    }
}
