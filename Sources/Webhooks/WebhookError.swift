/// Why a webhook operation was refused; nothing was written.
public struct WebhookError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// A malformed URL, secret, event type, time range or id.
        case invalidInput = "invalid_input"
        /// No endpoint has that id.
        case noSuchEndpoint = "no_such_endpoint"
        /// No event has that id.
        case noSuchEvent = "no_such_event"
        /// The endpoint is disabled already.
        case alreadyDisabled = "already_disabled"
        /// The URL names an address webhooks may not go to (loopback, private, link-local, reserved...).
        case destinationRefused = "destination_refused"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
