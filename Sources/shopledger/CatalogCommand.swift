import APIViews
import ArgumentParser
import Foundation
import Ledger
import Reports

/// `shopledger catalog`: the catalog as data (the same as `/api/v1/admin/catalog`, for operators with
/// database access). Each writing command is an audited change (`catalog_changes`: who, why, when,
/// the names before and after), live at once on every running server: no migration, no restart.
struct CatalogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "List the catalog; add, rename or retire an item, or sell it on Google Play, while the shop runs.",
        subcommands: [
            CatalogListCommand.self, CatalogAddCommand.self, CatalogRenameCommand.self, CatalogRetireCommand.self,
            CatalogGoogleProductCommand.self,
        ])
}

/// The item a command names: `--kind face|background --index N`.
struct CatalogItemOptions: ParsableArguments {
    @Option(help: "face or background.")
    var kind: String

    @Option(help: "The item's index within its kind (0 is the free item).")
    var index: Int

    func item() throws -> ItemID {
        guard let kind = ItemKind(rawValue: kind) else { throw ValidationError("--kind must be face or background") }
        return ItemID(kind: kind, index: index)
    }
}

struct CatalogListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Every item, faces then backgrounds, retired ones marked.")

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Print the items as JSON, as GET /api/v1/admin/catalog answers.")
    var json = false

    func run() async throws {
        let items = try await database.withClient(schema: .requireCurrent) { client in
            try await CatalogStore(client: client).allItems()
        }
        if json {
            try JSONOutput.view(CatalogView(items))
        } else {
            print(items.map(CatalogText.item).joined(separator: "\n"))
        }
    }
}

struct CatalogAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a paid item: sold, owned, shown and reported at once, without a restart.",
        discussion: """
            The index is any unused one of its kind from 1 to 32767 (usually the next); the kind, index, \
            product id and price never change afterwards. Create the product in App Store Connect with the \
            same product id.
            """)

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var who: SupportActorOptions
    @OptionGroup var target: CatalogItemOptions

    @Option(help: "The App Store product id (letters, digits, underscores and periods).")
    var productId: String

    @Option(help: "The Korean name (the name the shop and the reports show).")
    var nameKo: String

    @Option(help: "The English name.")
    var nameEn: String

    @Option(help: "The Korean description the catalog shows. Default: empty.")
    var descriptionKo = ""

    @Option(help: "The price in major units, an exact decimal with at most 3 decimals (2500 is ₩2,500).")
    var price: String

    @Option(help: "The price's ISO 4217 currency code, e.g. KRW.")
    var currency: String

    func run() async throws {
        let item = try target.item()
        let price = try CatalogRules.price(price, currency: currency)
        let new = NewCatalogItem(
            item: item, productId: productId, name: nameKo, nameEn: nameEn, description: descriptionKo, price: price)
        let change = try await database.withClient(schema: .requireCurrent) { client in
            try await CatalogStore(client: client).add(new, SupportRequest(actor: who.actor, reason: who.reason))
        }
        print(CatalogText.change(change))
    }
}

struct CatalogRenameCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rename", abstract: "Rename an item (its Korean name, its English name, or both).")

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var who: SupportActorOptions
    @OptionGroup var target: CatalogItemOptions

    @Option(help: "The new Korean name.")
    var nameKo: String?

    @Option(help: "The new English name.")
    var nameEn: String?

    func run() async throws {
        let item = try target.item()
        let change = try await database.withClient(schema: .requireCurrent) { client in
            try await CatalogStore(client: client).rename(
                item, name: nameKo, nameEn: nameEn, SupportRequest(actor: who.actor, reason: who.reason))
        }
        print(CatalogText.change(change))
    }
}

struct CatalogRetireCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retire",
        abstract: "Retire an item: no longer sold from now on, still owned, equippable and reported.",
        discussion: """
            Retiring is final. Remove the product from sale in App Store Connect too: Apple keeps selling \
            what is only retired here, and the server refuses to record those purchases.
            """)

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var who: SupportActorOptions
    @OptionGroup var target: CatalogItemOptions

    func run() async throws {
        let item = try target.item()
        let change = try await database.withClient(schema: .requireCurrent) { client in
            try await CatalogStore(client: client).retire(item, SupportRequest(actor: who.actor, reason: who.reason))
        }
        print(CatalogText.change(change))
    }
}

struct CatalogGoogleProductCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google-product",
        abstract: "Sell an item on Google Play too: its product id in the Play Console (set once, never changed).")

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var target: CatalogItemOptions

    @Option(help: "The Play Console product id (lowercase letters, digits, underscores and periods).")
    var googleProductId: String

    func run() async throws {
        let item = try target.item()
        try await database.withClient(schema: .requireCurrent) { client in
            try await CatalogStore(client: client).setGoogleProductId(item, googleProductId)
        }
        print("\(item.kind.rawValue) \(item.index) is sold on Google Play as \(googleProductId)")
    }
}

/// Plain-text lines for the catalog commands.
enum CatalogText {
    static func item(_ item: CatalogItem) -> String {
        var line = "\(item.kind.rawValue) \(item.index) \(item.productId ?? "(free)") \(item.name)"
        if let nameEn = item.nameEn { line += " / \(nameEn)" }
        if let google = item.googleProductId { line += " [Google Play: \(google)]" }
        line +=
            " \(CurrencyFormat.amount(item.price.amountMilli, currency: item.price.currency)) \(item.price.currency)"
        if let retiredAt = item.retiredAt { line += " [retired \(SupportText.time(retiredAt))]" }
        return line
    }

    static func change(_ change: CatalogChange) -> String {
        var line =
            "\(change.kind.rawValue) #\(change.changeId) by \(change.actor) at \(SupportText.time(change.changedAt)): "
            + "\(change.reason)\n  " + item(change.item)
        if change.kind == .rename {
            line += "\n  was \(change.nameBefore ?? "")" + (change.nameEnBefore.map { " / \($0)" } ?? "")
        }
        return line
    }
}
