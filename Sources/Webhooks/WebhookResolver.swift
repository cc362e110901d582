import Foundation
import NIOPosix
import Synchronization

/// Finds the addresses a delivery's host name stands for. Deliveries check every one of them and
/// connect only to one they checked (``WebhookPoster``); tests inject a resolver of their own.
public protocol WebhookResolver: Sendable {
    /// Every address `host` resolves to; throws ``WebhookResolutionError`` when it resolves to none.
    func addresses(of host: String) async throws -> [WebhookIPAddress]
}

/// A host name that did not resolve.
public struct WebhookResolutionError: Error, Sendable, CustomStringConvertible {
    public let host: String
    public let reason: String

    public init(host: String, reason: String) {
        self.host = host
        self.reason = reason
    }

    public var description: String { "\(host.prefix(100).debugDescription) did not resolve: \(reason)" }
}

/// The system's resolver (`getaddrinfo`, as the HTTP client would have used), on NIO's blocking-work
/// thread pool, never on the cooperative threads. A lookup that outlives its task's cancellation (a
/// delivery timed out) is left to finish on its own; the delivery does not wait for it.
public struct SystemResolver: WebhookResolver {
    public init() {}

    public func addresses(of host: String) async throws -> [WebhookIPAddress] {
        let waiter = ResolutionWaiter()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard waiter.set(continuation) else { return }
                NIOThreadPool.singleton.submit { state in
                    guard case .active = state else {
                        waiter.resume(.failure(WebhookResolutionError(host: host, reason: "the resolver is shut down")))
                        return
                    }
                    waiter.resume(Result { try Self.lookUp(host) })
                }
            }
        } onCancel: {
            waiter.resume(.failure(CancellationError()))
        }
    }

    /// `getaddrinfo` for a TCP connection, any family; the addresses in its order, without duplicates.
    static func lookUp(_ host: String) throws(WebhookResolutionError) -> [WebhookIPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw WebhookResolutionError(host: host, reason: reason)
        }
        defer { freeaddrinfo(first) }
        var found: [WebhookIPAddress] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next {
            next = entry.pointee.ai_next
            guard let address = entry.pointee.ai_addr else { continue }
            let resolved: WebhookIPAddress
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                let v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                resolved = .v4(UInt32(bigEndian: v4.s_addr))
            case AF_INET6:
                let v6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                resolved = WebhookIPAddress(in6: v6)
            default:
                continue
            }
            if !found.contains(resolved) { found.append(resolved) }
        }
        guard !found.isEmpty else { throw WebhookResolutionError(host: host, reason: "no IP address") }
        return found
    }
}

/// Resumes a lookup's continuation once: with the lookup's result, or with cancellation, whichever comes first.
private final class ResolutionWaiter: Sendable {
    private enum State {
        case waiting
        case suspended(CheckedContinuation<[WebhookIPAddress], any Error>)
        case done
    }

    private let state = Mutex(State.waiting)

    /// False when cancellation came first (the continuation is resumed already).
    func set(_ continuation: CheckedContinuation<[WebhookIPAddress], any Error>) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            guard case .waiting = state else { return true }
            state = .suspended(continuation)
            return false
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    func resume(_ result: Result<[WebhookIPAddress], any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<[WebhookIPAddress], any Error>? in
            switch state {
            case .waiting:
                state = .done
                return nil
            case .suspended(let continuation):
                state = .done
                return continuation
            case .done:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
