import Console
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Postgres
import TestSupport

/// A clock the console's sessions and sign-in windows read, moved by the test.
final class ConsoleTestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: 1_796_000_000)

    var now: Date { lock.withLock { current } }

    func advance(_ seconds: TimeInterval) { lock.withLock { current = current.addingTimeInterval(seconds) } }
}

/// Runs `body` against the console's router on a database of its own (`.router`: no socket), with an
/// injected clock and cheap password hashes.
func withConsole(
    _ label: String = #function,
    configure: (inout ConsoleConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (any TestClientProtocol, TestDatabase, ConsoleTestClock) async throws -> Void
) async throws {
    var configuration = ConsoleConfiguration(port: 0, passwordCost: .testing)
    configure(&configuration)
    let clock = ConsoleTestClock()
    try await withTestDatabase(label) { db in
        let app = buildConsole(
            configuration: configuration, services: ConsoleServices(client: db.client, clock: { clock.now }),
            logger: Logger(label: "console-test"))
        try await app.test(.router) { client in try await body(client, db, clock) }
    }
}
