import Crypto
import Foundation
import ShopServer
import TestSupport
import Testing
import _CryptoExtras

@Suite("Firebase ID token verification")
struct FirebaseTokenVerifierTests {
    let verifier: FirebaseTokenVerifier
    let tokens = TestTokens()

    init() throws {
        verifier = try makeFirebaseVerifier()
    }

    @Test func aValidTokenGivesItsUidAndClaims() throws {
        let token = try tokens.token()
        #expect(try verifier.uid(forToken: token) == "user-123")
        let claims = try verifier.verify(token)
        #expect(claims.issuer == "https://securetoken.google.com/sesac-shop-test")
        #expect(claims.audience == "sesac-shop-test")
        #expect(claims.expiresAt == Date(timeIntervalSince1970: 1_800_003_590))
        #expect(claims.issuedAt == Date(timeIntervalSince1970: 1_799_999_990))
        #expect(claims.authTime == Date(timeIntervalSince1970: 1_799_999_900))
        #expect(claims.signInProvider == "phone")
    }

    @Test func aTokenWithoutAuthTimeOrFirebaseClaimIsAccepted() throws {
        let token = try tokens.with(["auth_time": nil, "firebase": nil]).token()
        let claims = try verifier.verify(token)
        #expect(claims.authTime == nil)
        #expect(claims.signInProvider == nil)
    }

    // MARK: exp / iat / auth_time against the clock

    @Test func expiredBeyondTheSkewIsRefused() throws {
        let token = try tokens.with(["exp": 1_800_000_000 - 61]).token()
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .expired)
        let exactlyAtSkew = try tokens.with(["exp": 1_800_000_000 - 60]).token()
        #expect(refusal { try verifier.uid(forToken: exactlyAtSkew) }?.code == .expired)
    }

    @Test func expiredWithinTheSkewIsAccepted() throws {
        let token = try tokens.with(["exp": 1_800_000_000 - 30]).token()
        #expect(try verifier.uid(forToken: token) == "user-123")
    }

    @Test func theSkewIsConfigurable() throws {
        let strict = try makeFirebaseVerifier(clockSkew: 0)
        let justExpired = try tokens.with(["exp": 1_800_000_000 - 1]).token()
        #expect(refusal { try strict.uid(forToken: justExpired) }?.code == .expired)
        let lenient = try makeFirebaseVerifier(clockSkew: 300)
        #expect(try lenient.uid(forToken: justExpired) == "user-123")
    }

    @Test func issuedInTheFutureIsRefused() throws {
        let token = try tokens.with(["iat": 1_800_000_000 + 61]).token()
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .notYetValid)
    }

    @Test func issuedSlightlyInTheFutureIsWithinTheSkew() throws {
        let token = try tokens.with(["iat": 1_800_000_000 + 30]).token()
        #expect(try verifier.uid(forToken: token) == "user-123")
    }

    @Test func authTimeInTheFutureIsRefused() throws {
        let token = try tokens.with(["auth_time": 1_800_000_000 + 3600]).token()
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .notYetValid)
    }

    @Test func theInjectedClockDecides() throws {
        let token = try tokens.token()
        let twoHoursLater = try makeFirebaseVerifier(now: authTestNow + 7200)
        #expect(refusal { try twoHoursLater.uid(forToken: token) }?.code == .expired)
        let anHourEarlier = try makeFirebaseVerifier(now: authTestNow - 3600)
        #expect(refusal { try anHourEarlier.uid(forToken: token) }?.code == .notYetValid)
    }

    @Test func missingExpOrIatIsMalformed() throws {
        for claim in ["exp", "iat"] {
            let token = try tokens.with([claim: nil]).token()
            #expect(refusal { try verifier.uid(forToken: token) }?.code == .malformedToken, "without \(claim)")
        }
        let stringExp = try tokens.with(["exp": "1800003590"]).token()
        #expect(refusal { try verifier.uid(forToken: stringExp) }?.code == .malformedToken)
    }

    // MARK: iss / aud / sub

    @Test(arguments: [
        "https://securetoken.google.com/another-project",
        "http://securetoken.google.com/sesac-shop-test",
        "https://securetoken.google.com/sesac-shop-test/",
        "https://accounts.google.com",
    ])
    func aWrongIssuerIsRefused(issuer: String) throws {
        let token = try tokens.with(["iss": issuer]).token()
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .wrongIssuer)
    }

    @Test func aMissingIssuerIsRefused() throws {
        let token = try tokens.with(["iss": nil]).token()
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .wrongIssuer)
    }

    @Test func aWrongAudienceIsRefused() throws {
        for audience: Any in ["another-project", "SESAC-SHOP-TEST", ["sesac-shop-test"], 42] {
            let token = try tokens.with(["aud": audience]).token()
            #expect(refusal { try verifier.uid(forToken: token) }?.code == .wrongAudience, "aud \(audience)")
        }
        let missing = try tokens.with(["aud": nil]).token()
        #expect(refusal { try verifier.uid(forToken: missing) }?.code == .wrongAudience)
    }

    @Test func anInvalidSubjectIsRefused() throws {
        for subject: Any? in ["", String(repeating: "u", count: 129), nil, 12345] {
            let token = try tokens.with(["sub": subject]).token()
            #expect(
                refusal { try verifier.uid(forToken: token) }?.code == .invalidSubject,
                "sub \(String(describing: subject))")
        }
    }

    @Test func aSubjectOf128CharactersIsTheUid() throws {
        let uid = String(repeating: "u", count: 128)
        let token = try tokens.with(["sub": uid]).token()
        #expect(try verifier.uid(forToken: token) == uid)
    }

    // MARK: keys and signatures

    @Test func aTokenSignedByAnotherKeyUnderAKnownKidIsRefused() throws {
        let forged = TestTokens(signer: .other, kid: "kid-primary")
        #expect(refusal { try verifier.uid(forToken: try! forged.token()) }?.code == .invalidSignature)
    }

    @Test func anUnknownKidIsRefused() throws {
        let token = try TestTokens(signer: .other, kid: "kid-other").token()
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .unknownKey)
    }

    @Test func aMissingKidIsRefused() throws {
        let token = try TestTokens(header: ["alg": "RS256", "typ": "JWT"]).token()
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .unknownKey)
    }

    @Test func aKeyWhoseCertificateIsOutsideItsValidityIsRefused() throws {
        let stale = try makeFirebaseVerifier(keys: ["kid-expired": .expiredCertificate])
        let token = try TestTokens(signer: .expiredCertificate, kid: "kid-expired").token()
        #expect(refusal { try stale.uid(forToken: token) }?.code == .keyNotValid)
        // The same key and certificate, two days earlier, while the certificate was valid.
        let earlier = try makeFirebaseVerifier(
            keys: ["kid-expired": .expiredCertificate], now: authTestNow - 2 * 86_400)
        let earlierToken = try TestTokens(
            signer: .expiredCertificate, kid: "kid-expired",
            claims: TestTokens.defaultClaims(now: authTestNow - 2 * 86_400)
        ).token()
        #expect(try earlier.uid(forToken: earlierToken) == "user-123")
    }

    @Test func aTamperedPayloadIsRefused() throws {
        let genuine = try tokens.token()
        let signature = genuine.split(separator: ".")[2]
        let tampered = tokens.with(["sub": "someone-else"]).token(signatureSegment: String(signature))
        #expect(refusal { try verifier.uid(forToken: tampered) }?.code == .invalidSignature)
    }

    @Test func aTamperedOrMissingSignatureIsRefused() throws {
        let genuine = try tokens.token()
        var signature = Array(genuine.split(separator: ".")[2].utf8)
        signature[10] = signature[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let flipped = tokens.token(signatureSegment: String(decoding: signature, as: UTF8.self))
        #expect(refusal { try verifier.uid(forToken: flipped) }?.code == .invalidSignature)
        #expect(refusal { try verifier.uid(forToken: tokens.token(signatureSegment: "")) }?.code == .invalidSignature)
    }

    // MARK: algorithms

    @Test func algNoneIsRefused() throws {
        let unsigned = TestTokens(header: ["alg": "none", "kid": "kid-primary"]).token(signatureSegment: "")
        #expect(refusal { try verifier.uid(forToken: unsigned) }?.code == .unsupportedAlgorithm)
        let noneWithoutKid = TestTokens(header: ["alg": "none"]).token(signatureSegment: "")
        #expect(refusal { try verifier.uid(forToken: noneWithoutKid) }?.code == .unsupportedAlgorithm)
    }

    @Test func hs256IsRefused() throws {
        let unsigned = TestTokens(header: ["alg": "HS256", "kid": "kid-primary", "typ": "JWT"])
        let input = unsigned.signingInput()
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data("secret".utf8)))
        #expect(
            refusal { try verifier.uid(forToken: input + "." + authBase64URL(Data(mac))) }?.code
                == .unsupportedAlgorithm)
    }

    /// The classic confusion attack: an HS256 token whose HMAC key is the RSA public key (which is public),
    /// hoping the verifier feeds "the key for this kid" to HMAC.
    @Test func hs256KeyedWithTheCertificatesPublicKeyIsRefused() throws {
        let attack = TestTokens(header: ["alg": "HS256", "kid": "kid-primary", "typ": "JWT"])
        let input = attack.signingInput()
        let publicKeyEncodings: [Data] = [
            TestSigningKey.primary.publicKeyDER,
            Data(TestSigningKey.primary.publicKeyPEM.utf8),
            Data(TestSigningKey.primary.certificatePEM.utf8),
        ]
        for secret in publicKeyEncodings {
            let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: secret))
            let token = input + "." + authBase64URL(Data(mac))
            #expect(refusal { try verifier.uid(forToken: token) }?.code == .unsupportedAlgorithm)
        }
    }

    @Test(arguments: ["RS384", "RS512", "PS256", "ES256", "rs256", "RS256 ", ""])
    func otherAlgorithmsAreRefused(algorithm: String) throws {
        // Even correctly RS256-signed, a token whose header claims another algorithm is refused.
        let token = try TestTokens(header: ["alg": algorithm, "kid": "kid-primary"]).token()
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .unsupportedAlgorithm)
    }

    @Test func aHeaderWithoutAlgOrWithCriticalExtensionsIsMalformed() throws {
        let noAlg = try TestTokens(header: ["kid": "kid-primary"]).token()
        #expect(refusal { try verifier.uid(forToken: noAlg) }?.code == .malformedToken)
        let critical = try TestTokens(header: ["alg": "RS256", "kid": "kid-primary", "crit": ["exp"], "exp": 1]).token()
        #expect(refusal { try verifier.uid(forToken: critical) }?.code == .malformedToken)
    }

    // MARK: shape and size

    @Test func anOversizedTokenIsRefusedBeforeDecoding() throws {
        let padding = String(repeating: "x", count: 9000)
        let big = try tokens.with(["padding": padding]).token()
        let error = refusal { try verifier.uid(forToken: big) }
        #expect(error?.code == .malformedToken)
        #expect(error?.message.contains("8192-byte limit") == true)
        // Not even split: a long run of garbage is refused on its size alone.
        let garbage = String(repeating: "a.", count: 10_000)
        #expect(refusal { try verifier.uid(forToken: garbage) }?.code == .malformedToken)
    }

    @Test(arguments: [
        "not-a-jwt",
        "a.b",
        "a.b.c.d",
        ".payload.signature",
        "header..signature",
        "ab*d.eyJ9.c2ln",
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0=.c2ln",  // padding is not base64url of JWS
        "eyJhbGciOiJSUzI1NiJ9.eyJz dWIiOiJ4In0.c2ln",
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2l+",  // base64, not base64url
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lu=",
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c",  // impossible length
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.QR",  // "A" with non-zero leftover bits (canonical: "QQ")
        "bm90IGpzb24.eyJzdWIiOiJ4In0.c2ln",  // header is not JSON
        "WzFd.eyJzdWIiOiJ4In0.c2ln",  // header is a JSON array
        "dev:alice",
    ])
    func malformedInputIsRefused(token: String) throws {
        #expect(refusal { try verifier.uid(forToken: token) }?.code == .malformedToken)
    }

    @Test func onlyCanonicalBase64URLPassesTheShapeCheck() throws {
        // `{"alg":"RS256"}.{"sub":"x"}.` and a one-byte signature: "QQ" is the one canonical spelling of
        // that byte, so it gets past the shape check (to fail on the missing kid); "QR" does not.
        let prefix = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0."
        #expect(refusal { try verifier.uid(forToken: prefix + "QQ") }?.code == .unknownKey)
        #expect(refusal { try verifier.uid(forToken: prefix + "QR") }?.code == .malformedToken)
    }

    @Test func anEmptyTokenIsMissing() throws {
        #expect(refusal { try verifier.uid(forToken: "") }?.code == .missingToken)
    }

    @Test func refusalsNeverEchoTheToken() throws {
        let genuine = try tokens.token()
        let segments = genuine.split(separator: ".").map(String.init)
        let candidates: [String] = [
            try tokens.with(["exp": 1]).token(),
            try tokens.with(["aud": "other"]).token(),
            try tokens.with(["iss": "https://evil.example"]).token(),
            try tokens.with(["sub": ""]).token(),
            try TestTokens(signer: .other, kid: "kid-secret-looking-name").token(),
            try TestTokens(signer: .other).token(),
            segments[0] + "." + segments[1] + "." + segments[2] + "x",
            genuine + String(repeating: "A", count: 9000),
        ]
        for token in candidates {
            let error = try #require(refusal { try verifier.uid(forToken: token) })
            for segment in token.split(separator: ".") where segment.count >= 8 {
                #expect(!error.description.contains(segment))
            }
            #expect(!error.description.contains("kid-secret-looking-name"))
            #expect(!error.description.contains("evil.example"))
        }
    }

    @Test func aBadProjectIdOrSkewIsAConfigurationError() throws {
        let certificates = try GoogleCertificates(parsingJSON: googleCertificateJSON(["kid-primary": .primary]))
        let store = GoogleCertificateStore(certificates)
        #expect(configurationRefusal { try FirebaseTokenVerifier(projectId: "", certificates: store) } != nil)
        #expect(configurationRefusal { try FirebaseTokenVerifier(projectId: "a/b", certificates: store) } != nil)
        #expect(
            configurationRefusal { try FirebaseTokenVerifier(projectId: "p", certificates: store, clockSkew: -1) }
                != nil)
        #expect(
            configurationRefusal { try FirebaseTokenVerifier(projectId: "p", certificates: store, clockSkew: .nan) }
                != nil)
        #expect(
            configurationRefusal { try FirebaseTokenVerifier(projectId: "example.com:legacy-1", certificates: store) }
                == nil)
    }
}
