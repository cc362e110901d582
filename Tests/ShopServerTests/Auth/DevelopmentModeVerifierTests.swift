import ShopServer
import TestSupport
import Testing

@Suite("Development tokens (dev:<uid>)")
struct DevelopmentModeVerifierTests {
    @Test func whenOnADevTokenIsItsUid() throws {
        let verifier = DevelopmentModeVerifier(wrapping: try makeFirebaseVerifier())
        #expect(try verifier.uid(forToken: "dev:alice") == "alice")
        #expect(try verifier.uid(forToken: "dev:User_42-b") == "User_42-b")
        let longest = String(repeating: "z", count: 128)
        #expect(try verifier.uid(forToken: "dev:" + longest) == longest)
    }

    @Test func whenOnRealTokensStillGoThroughFirebaseVerification() throws {
        let verifier = DevelopmentModeVerifier(wrapping: try makeFirebaseVerifier())
        #expect(try verifier.uid(forToken: TestTokens().token()) == "user-123")
        let expired = try TestTokens().with(["exp": 1]).token()
        #expect(refusal { try verifier.uid(forToken: expired) }?.code == .expired)
    }

    @Test(arguments: [
        "dev:", "dev:a b", "dev:a.b", "dev:é", "dev:a/b", "dev:a:b", "dev:" + String(repeating: "z", count: 129),
    ])
    func badDevUidsAreRefused(token: String) throws {
        let verifier = DevelopmentModeVerifier(wrapping: try makeFirebaseVerifier())
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .invalidSubject)
    }

    @Test func thePrefixIsExact() throws {
        let verifier = DevelopmentModeVerifier(wrapping: try makeFirebaseVerifier())
        for token in ["DEV:alice", "dev alice", " dev:alice", "dev;alice"] {
            #expect(refusal { try verifier.uid(forToken: token) }?.code == .malformedToken, "\(token)")
        }
    }

    @Test func whenOffADevTokenIsMalformed() throws {
        let verifier = try makeFirebaseVerifier()
        #expect(refusal { try verifier.uid(forToken: "dev:alice") }?.code == .malformedToken)
    }

    @Test func developmentOnlyRefusesEverythingElse() throws {
        let verifier = DevelopmentModeVerifier(wrapping: nil)
        #expect(try verifier.uid(forToken: "dev:bob") == "bob")
        let firebaseToken = try TestTokens().token()
        #expect(refusal { try verifier.uid(forToken: firebaseToken) }?.code == .malformedToken)
    }
}
