import Hummingbird
import NIOCore

/// The request context of every route: Hummingbird's core storage plus who the request is from, filled
/// in by the auth middleware of the route's group (``UserAuthentication``, ``AdminAuthentication``).
/// A route reads the caller with ``requireUID()`` or ``requireAdminActor()``; outside such a group they
/// refuse, so a route put in the wrong group fails closed instead of being public.
public struct ShopRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The uid proven by the request's ID token (a user route's group).
    var uid: String?
    /// The admin token's label, the actor of what the request does (an admin route's group).
    var adminActor: String?
    /// The connection's TCP peer: the client, or the proxy in front of it.
    public let peerAddress: IPAddress?
    /// Who sent the request: the peer, or the client a trusted proxy names (``ShopResponder`` sets it).
    public var clientAddress: IPAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.peerAddress = source.channel.remoteAddress?.ipAddress.flatMap { IPAddress($0) }
        self.clientAddress = peerAddress
    }

    /// The caller's uid, set by ``UserAuthentication``.
    func requireUID() throws(AuthError) -> String {
        guard let uid else { throw AuthError(.missingToken, "this route needs a signed-in user") }
        return uid
    }

    /// The admin token's label, set by ``AdminAuthentication``.
    func requireAdminActor() throws(AuthError) -> String {
        guard let adminActor else { throw AuthError(.adminRequired, "admin endpoints need the admin bearer token") }
        return adminActor
    }
}

/// A context that knows the connection's peer and carries the client address derived from it.
public protocol ClientAddressContext: RequestContext {
    var peerAddress: IPAddress? { get }
    var clientAddress: IPAddress? { get set }
}

extension ShopRequestContext: ClientAddressContext {}

/// The middleware of a user routes' group: the request's ID token must prove a uid, which it puts in the
/// context; otherwise the ``AuthError`` goes to ``ErrorMiddleware``, which answers in the surface's way.
struct UserAuthentication: RouterMiddleware {
    typealias Context = ShopRequestContext

    /// Where the surface carries the token.
    enum TokenHeader: Sendable {
        /// `idtoken: <token>`, the SeSAC surface.
        case idtoken
        /// `Authorization: Bearer <token>`, the JSON surface.
        case bearer
    }

    let authenticator: Authenticator
    let header: TokenHeader

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        switch header {
        case .idtoken: context.uid = try authenticator.uid(fromSeSACHeaders: request.headers)
        case .bearer: context.uid = try authenticator.uid(fromBearerHeaders: request.headers)
        }
        return try await next(request, context)
    }
}

/// The middleware of the admin routes' group: `Authorization: Bearer` must carry the configured admin
/// token (``Authenticator/requireAdmin(_:)``); its label goes in the context.
struct AdminAuthentication: RouterMiddleware {
    typealias Context = ShopRequestContext

    let authenticator: Authenticator

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.adminActor = try authenticator.requireAdmin(request.headers)
        return try await next(request, context)
    }
}
