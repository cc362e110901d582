import Hummingbird
import NIOCore

/// The context of every console request: who is signed in (set by ``SessionMiddleware``), the page's
/// language, and the client's address (the TCP peer; the console is reached directly or through a
/// proxy its operator trusts: see docs/console.md).
public struct ConsoleContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    var session: ConsoleSession?
    var language: Language = .ko
    let address: String?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.address = source.channel.remoteAddress?.ipAddress
    }

    /// The signed-in session; outside the session group it refuses, so a misplaced route fails closed.
    func requireSession() throws -> ConsoleSession {
        guard let session else { throw HTTPError(.unauthorized) }
        return session
    }

    var operatorName: String { session?.operatorAccount.name ?? "(anonymous)" }
}
