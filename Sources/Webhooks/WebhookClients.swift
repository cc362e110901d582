import AsyncHTTPClient
import Foundation
import NIOCore

/// The HTTP clients deliveries go through, so that each connects only to an address that was checked.
///
/// An URL whose host is an address in standard form goes through one shared client: the HTTP client
/// connects to that address without resolving anything. A host name gets a client of its own, whose
/// `dnsOverride` pins the name to one address the delivery resolved and checked (TLS and `Host` keep
/// the name): the HTTP client never resolves it again. The client stays, and its pooled connections
/// with it, while the name's answers still include that address; when they no longer do, a new client
/// is pinned to one of the new answers and the old one is shut down once its deliveries in flight end.
/// At most ``maximumHosts`` host clients are kept; the least recently used idle ones go first.
public actor WebhookClients {
    /// Host names with a pinned client kept at once (more while all of them are in use).
    public static let maximumHosts = 64

    private let configuration: HTTPClient.Configuration
    private var direct: HTTPClient?
    private var pinned: [String: Pinned] = [:]
    private var inUse: [ObjectIdentifier: Int] = [:]
    private var retired: [ObjectIdentifier: HTTPClient] = [:]
    private var closed = false
    /// Shutdowns of clients replaced or evicted, awaited by ``shutdown()``.
    private var closing: [UUID: Task<Void, Never>] = [:]

    private struct Pinned {
        let address: WebhookIPAddress
        let client: HTTPClient
        var lastUsed: ContinuousClock.Instant
    }

    /// A client lent to one delivery; give it back with ``release(_:)``.
    public struct Lease: Sendable {
        public let client: HTTPClient
        /// The address the client connects to for the host (nil: the URL's own address).
        public let address: WebhookIPAddress?
    }

    public init(configuration: HTTPClient.Configuration = WebhookClients.standardConfiguration()) {
        self.configuration = configuration
    }

    /// For deliveries: no redirects, no decompression, HTTP/1.1 and HTTP/2 as the endpoint offers, a 5 s
    /// connect timeout and no retried connects, 8 connections per host and idle ones closed after 60 s.
    public static func standardConfiguration() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5)),
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 8),
            decompression: .disabled)
        configuration.maximumUsesPerConnection = 1000
        // A connection that cannot be made fails the attempt at once (connection_failed), and the delivery
        // schedule tries again later. AsyncHTTPClient's own retries would run to the connect timeout and
        // race the attempt's timeout: a refused port was recorded as a timeout under load.
        configuration.connectionPool.retryConnectionEstablishment = false
        return configuration
    }

    /// The shared client, for URLs whose host is an address the HTTP client does not resolve.
    func leaseDirect() throws -> Lease {
        guard !closed else { throw HTTPClientError.alreadyShutdown }
        let client = direct ?? HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        direct = client
        inUse[ObjectIdentifier(client), default: 0] += 1
        return Lease(client: client, address: nil)
    }

    /// A client that connects to `host` at one of `addresses` (every one of them checked): the one
    /// pinned already when it is among them, else the first.
    func lease(host: String, addresses: [WebhookIPAddress]) throws -> Lease {
        guard !closed else { throw HTTPClientError.alreadyShutdown }
        precondition(!addresses.isEmpty)
        if var entry = pinned[host], addresses.contains(entry.address) {
            entry.lastUsed = .now
            pinned[host] = entry
            inUse[ObjectIdentifier(entry.client), default: 0] += 1
            return Lease(client: entry.client, address: entry.address)
        }
        if let old = pinned.removeValue(forKey: host) { retire(old.client) }
        var configuration = self.configuration
        configuration.dnsOverride = [host: addresses[0].description]
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        pinned[host] = Pinned(address: addresses[0], client: client, lastUsed: .now)
        inUse[ObjectIdentifier(client), default: 0] += 1
        evictIdle()
        return Lease(client: client, address: addresses[0])
    }

    public func release(_ lease: Lease) {
        let id = ObjectIdentifier(lease.client)
        let left = (inUse[id] ?? 1) - 1
        inUse[id] = left > 0 ? left : nil
        if left <= 0, let client = retired.removeValue(forKey: id) { shutDown(client) }
    }

    /// Shuts every client down; deliveries in flight are cancelled by it.
    public func shutdown() async {
        closed = true
        let clients = [direct].compactMap { $0 } + pinned.values.map(\.client) + retired.values
        direct = nil
        pinned = [:]
        retired = [:]
        for client in clients { try? await client.shutdown() }
        for task in closing.values { await task.value }
    }

    /// How many host names have a pinned client (tests).
    var pinnedHosts: Int { pinned.count }

    private func retire(_ client: HTTPClient) {
        if inUse[ObjectIdentifier(client)] == nil {
            shutDown(client)
        } else {
            retired[ObjectIdentifier(client)] = client
        }
    }

    private func evictIdle() {
        guard pinned.count > Self.maximumHosts else { return }
        let idle = pinned.filter { inUse[ObjectIdentifier($0.value.client)] == nil }.sorted {
            $0.value.lastUsed < $1.value.lastUsed
        }
        for (host, entry) in idle.prefix(pinned.count - Self.maximumHosts) {
            pinned[host] = nil
            shutDown(entry.client)
        }
    }

    private func shutDown(_ client: HTTPClient) {
        let id = UUID()
        closing[id] = Task {
            try? await client.shutdown()
            self.closed(id)
        }
    }

    private func closed(_ id: UUID) {
        closing[id] = nil
    }
}
