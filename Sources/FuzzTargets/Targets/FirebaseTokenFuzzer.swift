import Foundation
import ShopServer

/// Firebase ID tokens (``JWSInput`` files), verified at the pinned ``FuzzPKI/firebaseNow``. Invariants:
/// what is accepted was issued for this project, is live at that time and names a uid of 1–128 characters.
struct FirebaseTokenFuzzer: Sendable {
    let verifier: FirebaseTokenVerifier
    let now: Date

    func run(_ bytes: [UInt8]) -> FuzzOutcome {
        let token = JWSInput.compact(bytes)
        let claims: IDTokenClaims
        do {
            claims = try verifier.verify(token)
        } catch {
            return .refused(error.code.rawValue)
        }
        let skew = verifier.clockSkew
        invariant(claims.audience == verifier.projectId, "accepted a token for audience \(claims.audience)")
        invariant(claims.issuer == verifier.expectedIssuer, "accepted a token from issuer \(claims.issuer)")
        invariant(now < claims.expiresAt.addingTimeInterval(skew), "accepted an expired token")
        invariant(claims.issuedAt <= now.addingTimeInterval(skew), "accepted a token issued in the future")
        invariant((1...FirebaseTokenVerifier.maxUIDLength).contains(claims.uid.count), "accepted uid \(claims.uid)")
        invariant(token.utf8.count <= verifier.maxTokenBytes, "accepted a token over the size limit")
        return .accepted
    }
}
