import Foundation

/// The claims of a verified Firebase ID token: only ever produced by ``FirebaseTokenVerifier`` after the
/// signature and every rule have passed.
public struct IDTokenClaims: Sendable, Hashable {
    /// `sub`: the Firebase user id (1–128 characters).
    public let uid: String
    /// `iss`: `https://securetoken.google.com/<project>`.
    public let issuer: String
    /// `aud`: the Firebase project id.
    public let audience: String
    /// `iat`.
    public let issuedAt: Date
    /// `exp`.
    public let expiresAt: Date
    /// `auth_time`, when present: when the user signed in.
    public let authTime: Date?
    /// `firebase.sign_in_provider`, when present (`phone`, `password`, `custom`, ...).
    public let signInProvider: String?

    public init(
        uid: String, issuer: String, audience: String, issuedAt: Date, expiresAt: Date, authTime: Date?,
        signInProvider: String?
    ) {
        self.uid = uid
        self.issuer = issuer
        self.audience = audience
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.authTime = authTime
        self.signInProvider = signInProvider
    }
}

extension IDTokenClaims {
    /// The payload as sent, before any rule is applied. String claims of another JSON type are kept as
    /// ``ClaimString/notAString`` so that the verifier can answer with the claim's own code
    /// (`wrong_audience` for an array `aud`, say) rather than a generic `malformed_token`.
    struct Payload: Decodable {
        var iss: ClaimString?
        var aud: ClaimString?
        var sub: ClaimString?
        var exp: Double?
        var iat: Double?
        var authTime: Double?
        var signInProvider: String?

        enum CodingKeys: String, CodingKey {
            case iss, aud, sub, exp, iat
            case authTime = "auth_time"
            case firebase
        }

        struct Firebase: Decodable {
            var signInProvider: String?
            enum CodingKeys: String, CodingKey { case signInProvider = "sign_in_provider" }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            iss = try container.decodeIfPresent(ClaimString.self, forKey: .iss)
            aud = try container.decodeIfPresent(ClaimString.self, forKey: .aud)
            sub = try container.decodeIfPresent(ClaimString.self, forKey: .sub)
            exp = try container.decodeIfPresent(Double.self, forKey: .exp)
            iat = try container.decodeIfPresent(Double.self, forKey: .iat)
            authTime = try container.decodeIfPresent(Double.self, forKey: .authTime)
            // Informational only: an odd `firebase` claim does not invalidate a signed token.
            signInProvider = (try? container.decodeIfPresent(Firebase.self, forKey: .firebase))?.signInProvider
        }
    }

    /// A claim that should be a JSON string.
    enum ClaimString: Decodable, Equatable {
        case string(String)
        case notAString

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(String.self) {
                self = .string(value)
            } else {
                self = .notAString
            }
        }

        var string: String? {
            if case .string(let value) = self { return value }
            return nil
        }
    }
}
