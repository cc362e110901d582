import Crypto
import Foundation
import FuzzTargets
import TestSupport
import _CryptoExtras

/// Firebase ID tokens signed with the fuzz Google key, live at the harness's pinned clock (``JWSInput`` files).
struct FirebaseSeeds {
    let key: GoogleTestKey

    func claims(_ changes: [String: Any?] = [:]) -> [String: Any] {
        let now = Int(SeedDates.firebaseNow.timeIntervalSince1970)
        var claims: [String: Any] = [
            "iss": "https://securetoken.google.com/\(FuzzPKI.firebaseProjectId)",
            "aud": FuzzPKI.firebaseProjectId,
            "sub": "user-123",
            "user_id": "user-123",
            "iat": now - 10,
            "exp": now + 3590,
            "auth_time": now - 100,
            "firebase": ["identities": ["phone": ["+821012345678"]], "sign_in_provider": "phone"],
        ]
        for (name, value) in changes { claims[name] = value }
        return claims
    }

    /// A ``JWSInput`` file: header JSON, payload JSON and the RS256 signature over their base64url.
    func token(
        _ claims: [String: Any], header: [String: Any] = ["alg": "RS256", "kid": GoogleTestKey.keyID, "typ": "JWT"],
        signingKey: _RSA.Signing.PrivateKey? = nil
    ) throws -> [UInt8] {
        let headerJSON = TestPKI.json(header)
        let payloadJSON = TestPKI.json(claims)
        let input = TestPKI.base64URL(headerJSON) + "." + TestPKI.base64URL(payloadJSON)
        let signature = try (signingKey ?? key.privateKey).signature(
            for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return Array(headerJSON) + [0x0A] + Array(payloadJSON) + [0x0A] + Array(signature.rawRepresentation)
    }

    func seeds() throws -> [String: [UInt8]] {
        let valid = try token(claims())
        return [
            "valid-phone": valid,
            "valid-compact-text": Array(JWSInput.compact(valid).utf8),
            "valid-minimal": try token(claims(["auth_time": nil, "firebase": nil, "user_id": nil])),
            "refused-expired": try token(claims(["exp": Int(SeedDates.firebaseNow.timeIntervalSince1970) - 3600])),
            "refused-wrong-audience": try token(claims(["aud": "another-project"])),
            "refused-array-audience": try token(claims(["aud": [FuzzPKI.firebaseProjectId]])),
            "refused-long-uid": try token(claims(["sub": String(repeating: "u", count: 129)])),
            "refused-alg-hs256": try token(claims(), header: ["alg": "HS256", "kid": GoogleTestKey.keyID]),
            "refused-unknown-kid": try token(claims(), header: ["alg": "RS256", "kid": "another-key"]),
            "refused-crit": try token(
                claims(), header: ["alg": "RS256", "kid": GoogleTestKey.keyID, "crit": ["exp"]]),
        ]
    }
}
