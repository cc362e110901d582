import Foundation
import Hummingbird
import TestSupport
import Testing

@testable import ShopServer

/// Stopping the in-process server while connections it has accepted wait for its accept loop. NIO hands
/// each accepted connection to the loop through a buffer; a connection dropped from it unhandled (the
/// loop cancelled first) used to trap inside NIO ("Deinited NIOAsyncWriter without calling finish()")
/// and end the whole test process.
@Suite("Stopping the in-process server")
struct ServerStopTests {
    @Test("stopped with accepted connections its accept loop has not taken: no trap, and each is closed")
    func stopWithQueuedConnections() async throws {
        try await withTestDatabase { db in
            var configuration = ServerTest.configuration()
            configuration.host = "127.0.0.1"
            configuration.port = try TestCluster.freePort()
            let app = try buildApplication(
                configuration: configuration, client: db.client, logger: ServerTest.quietLogger)
            // The server's tasks (its accept loop among them) run on an executor the test can hold.
            let executor = PausableExecutor(label: "server-stop-test")
            let server = Task(executorPreference: executor) { try await app.runService() }
            try await WebhookReceiver.waitUntilListening(port: configuration.port)

            executor.pause()
            let connections = try HalfOpenConnections(count: 8, port: configuration.port)
            defer { connections.close() }
            #expect(connections.descriptors.count == 8)
            // NIO accepts on its event loops while the accept loop is held: wait until at least three left
            // the kernel's accept queue, so that the loop has connections buffered that it has not taken.
            // `make test` runs this suite on its own (ALONE_UNIT_TESTS): beside the others, NIO's accepts
            // waited for their event loops past this bound.
            do {
                try await BoundedVerificationTests.waitUntil {
                    guard let queued = Self.acceptQueueLength(port: configuration.port) else { return false }
                    return connections.descriptors.count - queued >= 3
                }
            } catch {
                // Say what the kernel showed, and stop the server before the database's teardown waits
                // for its held connections.
                let listening = Self.listeningLines(port: configuration.port)
                Issue.record(
                    "NIO did not accept 3 of 8 connections in 15 s: \(listening.count) listening socket(s) on the port, \(listening)"
                )
                server.cancel()
                executor.resume()
                _ = try? await server.value
                return
            }
            server.cancel()
            executor.resume()
            _ = try? await server.value

            // Every connection ends: those the loop had taken and those it had not (closed, not leaked).
            let deadline = ContinuousClock.now + .seconds(30)
            while connections.openCount > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(connections.openCount == 0, "every connection the stopped server had is closed")
        }
    }

    /// The lines of `/proc/net/tcp` that listen on `port` (local address, state, queues).
    static func listeningLines(port: Int) -> [String] {
        guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return [] }
        let portHex = String(format: "%04X", port)
        return table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count > 4 && fields[3] == "0A" && fields[1].hasSuffix(":" + portHex)
        }.map { $0.split(separator: " ", omittingEmptySubsequences: true).prefix(5).joined(separator: " ") }
    }

    /// The kernel's accept queue of the IPv4 socket listening on `port` (`/proc/net/tcp`, a LISTEN line's
    /// rx_queue): connections made but not yet accepted. Nil when no such socket is listed.
    static func acceptQueueLength(port: Int) -> Int? {
        guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return nil }
        let portHex = String(format: "%04X", port)
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 4, fields[3] == "0A", fields[1].hasSuffix(":" + portHex) else { continue }
            guard let rx = fields[4].split(separator: ":").last, let count = Int(rx, radix: 16) else { return nil }
            return count
        }
        return nil
    }
}
