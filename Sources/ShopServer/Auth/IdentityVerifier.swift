/// Turns a presented user token into the uid it proves. Synchronous and cheap (no network, no
/// database), so it can run inline in a request context or middleware.
///
/// Implementations: ``FirebaseTokenVerifier`` (production) and ``DevelopmentModeVerifier`` (accepts
/// `dev:<uid>` in front of another verifier; only ever built when configured).
public protocol IdentityVerifier: Sendable {
    /// The uid proven by `token`, or why not. The error never echoes the token.
    func uid(forToken token: String) throws(AuthError) -> String
}
