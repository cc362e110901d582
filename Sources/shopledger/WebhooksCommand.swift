import APIViews
import ArgumentParser
import Foundation
import Webhooks

/// `shopledger webhooks`: the endpoints other systems receive ledger events at (the same as
/// `/api/v1/admin/webhooks`, for operators with database access).
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Webhook endpoints: add, list, disable; replay events; show an event's attempts.",
        subcommands: [
            WebhooksAddCommand.self, WebhooksListCommand.self, WebhooksDisableCommand.self,
            WebhooksReplayCommand.self, WebhooksShowCommand.self,
        ])
}

/// Who changes the endpoints, recorded with the change.
struct WebhookActorOptions: ParsableArguments {
    @Option(help: "Who does this (recorded with the endpoint). Default: $USER, else operator")
    var actor: String?

    var name: String {
        actor ?? ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "operator"
    }
}

struct WebhooksAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add an endpoint: events recorded from now on are posted to it, signed.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var who: WebhookActorOptions
    @OptionGroup var destinations: WebhookDestinationOptions

    @Argument(
        help:
            "The endpoint's URL: https to a public address (or host name); with --webhook-allow-loopback, http or https to a loopback address."
    )
    var url: String

    @Option(help: "Event types to send, comma-separated (e.g. purchase.recorded,refund.applied). Default: every type")
    var events: String?

    @Option(
        name: .customLong("secret-file"),
        help: "File holding the signing secret (24 to 256 printable characters; private to its owner).")
    var secretFile: String

    @Option(help: "A note for operators (at most 200 characters).") var description: String = ""

    @Flag(help: "Print the endpoint as JSON, as POST /api/v1/admin/webhooks answers (its secret null: it is yours).")
    var json = false

    func run() async throws {
        let url = try WebhookURL(url, destinations: try destinations.destinations())
        let types = try events.map { text throws(WebhookError) in try WebhookEventType.parseList(text) }
        let secret = try SecretFile.read(secretFile, what: "the webhook signing secret")
        let endpoint = try await database.withClient(schema: .requireCurrent) { client in
            try await WebhookStore(client: client).addEndpoint(
                url: url, events: types, secret: secret, description: description, actor: who.name)
        }
        if json {
            try JSONOutput.view(AddedWebhookEndpointView(endpoint, madeSecret: nil))
        } else {
            print(WebhookText.endpoint(endpoint))
        }
    }
}

struct WebhooksListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Every endpoint: its events, state, failures and events waiting for it.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Print the endpoints as JSON, as GET /api/v1/admin/webhooks answers.") var json = false

    func run() async throws {
        let endpoints = try await database.withClient(schema: .requireCurrent) { client in
            try await WebhookStore(client: client).endpoints()
        }
        if json {
            try JSONOutput.view(WebhookEndpointsView(endpoints))
        } else {
            print(
                endpoints.isEmpty ? "no webhook endpoints" : endpoints.map(WebhookText.endpoint).joined(separator: "\n")
            )
        }
    }
}

struct WebhooksDisableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable", abstract: "Stop sending to an endpoint (its waiting events stay queued).")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var who: WebhookActorOptions

    @Argument(help: "The endpoint's id (as `list` prints it).") var endpointId: Int64

    func run() async throws {
        let endpoint = try await database.withClient(schema: .requireCurrent) { client in
            try await WebhookStore(client: client).disableEndpoint(endpointId, actor: who.name)
        }
        print(WebhookText.endpoint(endpoint))
    }
}

struct WebhooksReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Send events again, under their own ids: one event, or those created in a time range.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    @Option(help: "One event's id (evt_123).") var event: String?

    @Option(help: "The range's start, an ISO 8601 instant (inclusive), with --to.") var from: String?

    @Option(help: "The range's end, an ISO 8601 instant (exclusive), with --from.") var to: String?

    @Option(help: "Only these event types, comma-separated (with --from and --to). Default: every type")
    var events: String?

    @Option(help: "Only to this endpoint id. Default: every enabled endpoint subscribed to each event's type")
    var endpoint: Int64?

    func run() async throws {
        let selection: WebhookStore.ReplaySelection
        do {
            selection = try WebhookStore.ReplaySelection(
                event: event, from: from, to: to,
                types: try events.map { text throws(WebhookError) in try WebhookEventType.parseList(text) },
                names: .init(event: "--event", from: "--from", to: "--to", types: "--events"))
        } catch {
            throw ValidationError(error.message)  // a bad option: exit 64, as for every flag
        }
        let queued = try await database.withClient(schema: .requireCurrent) { client in
            try await WebhookStore(client: client).replay(selection, endpointId: endpoint)
        }
        print("queued \(queued) deliver\(queued == 1 ? "y" : "ies"); serve sends them in event order per user")
    }
}

struct WebhooksShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "An event's payload and every attempt at delivering it.")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    @Argument(help: "The event's id (evt_123).") var event: String

    func run() async throws {
        guard let eventId = WebhookEvent.eventId(parsing: event) else {
            throw ValidationError("the event id must be evt_<number>, got \(event.prefix(40))")
        }
        let (found, attempts) = try await database.withClient(schema: .requireCurrent) { client in
            let store = WebhookStore(client: client)
            return (try await store.event(eventId), try await store.attempts(of: eventId))
        }
        guard let found else { throw ValidationError("no webhook event has id \(WebhookEvent.publicId(eventId))") }
        var lines = [found.body]
        for attempt in attempts {
            lines.append(
                "endpoint \(attempt.endpointId) attempt \(attempt.attempt) \(SupportText.time(attempt.startedAt)) "
                    + "\(attempt.outcome) status=\(attempt.statusCode.map(String.init) ?? "none") "
                    + "\(attempt.durationMilliseconds) ms\(attempt.error.map { " error=\($0)" } ?? "")")
        }
        print(lines.joined(separator: "\n"))
    }
}

enum WebhookText {
    static func endpoint(_ endpoint: WebhookEndpoint) -> String {
        var state = endpoint.enabled ? "enabled" : "disabled"
        if let since = endpoint.failingSince {
            state += ", failing since \(SupportText.time(since)) (\(endpoint.consecutiveFailures) failures in a row)"
        }
        let events = endpoint.events?.map(\.rawValue).joined(separator: ",") ?? "every event"
        return "endpoint \(endpoint.endpointId) \(endpoint.url) [\(events)] \(state), \(endpoint.pending) pending"
            + (endpoint.lastDeliveredAt.map { ", last delivery \(SupportText.time($0))" } ?? "")
    }
}
