/// Development mode: accepts `dev:<uid>` (uid: 1–128 characters of `A–Z a–z 0–9 _ -`) as that uid, and
/// hands every other token to the wrapped verifier.
///
/// Only ever built when configured (see ``AuthConfiguration/acceptsDevelopmentTokens``): without this
/// wrapper a `dev:` token reaches ``FirebaseTokenVerifier`` and is refused as `malformed_token`.
public struct DevelopmentModeVerifier: IdentityVerifier {
    public static let prefix = "dev:"

    /// Verifies the tokens that are not `dev:` tokens; `nil` refuses them (development tokens only).
    public let production: (any IdentityVerifier)?

    public init(wrapping production: (any IdentityVerifier)?) {
        self.production = production
    }

    public func uid(forToken token: String) throws(AuthError) -> String {
        guard token.hasPrefix(Self.prefix) else {
            guard let production else {
                throw AuthError(.malformedToken, "only development tokens (dev:<uid>) are accepted here")
            }
            return try production.uid(forToken: token)
        }
        let uid = token.utf8.dropFirst(Self.prefix.utf8.count)
        guard (1...FirebaseTokenVerifier.maxUIDLength).contains(uid.count), uid.allSatisfy(Self.isUIDByte) else {
            throw AuthError(
                .invalidSubject,
                "a development token is dev:<uid>, uid 1–\(FirebaseTokenVerifier.maxUIDLength) characters of A-Z a-z 0-9 _ -"
            )
        }
        return String(decoding: uid, as: UTF8.self)
    }

    private static func isUIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}
