import HTTPTypes
import ShopServer
import Testing

@Suite("Reading tokens from request headers")
struct AuthHeadersTests {
    private func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    @Test func theSeSACSurfaceReadsTheIdtokenHeader() throws {
        #expect(try AuthHeaders.sesacToken(in: fields([("idtoken", "a.b.c")])) == "a.b.c")
        #expect(try AuthHeaders.sesacToken(in: fields([("IDToken", "  a.b.c\t")])) == "a.b.c")
    }

    @Test func aMissingOrEmptyIdtokenIsMissing() throws {
        #expect(refusal { try AuthHeaders.sesacToken(in: fields([])) }?.code == .missingToken)
        #expect(refusal { try AuthHeaders.sesacToken(in: fields([("idtoken", "")])) }?.code == .missingToken)
        #expect(refusal { try AuthHeaders.sesacToken(in: fields([("idtoken", "   ")])) }?.code == .missingToken)
        // The JSON surface's header does not count on the SeSAC surface.
        #expect(
            refusal { try AuthHeaders.sesacToken(in: fields([("authorization", "Bearer a.b.c")])) }?.code
                == .missingToken)
    }

    @Test func twoIdtokenHeadersAreRefused() throws {
        let headers = fields([("idtoken", "a.b.c"), ("idtoken", "d.e.f")])
        #expect(refusal { try AuthHeaders.sesacToken(in: headers) }?.code == .malformedToken)
    }

    @Test(arguments: [
        "Bearer a.b.c", "bearer a.b.c", "BEARER a.b.c", "Bearer  a.b.c", "Bearer\ta.b.c", " Bearer a.b.c ",
    ])
    func theJSONSurfaceReadsABearerToken(value: String) throws {
        #expect(try AuthHeaders.bearerToken(in: fields([("Authorization", value)])) == "a.b.c")
    }

    @Test func otherAuthorizationValuesAreRefused() throws {
        func code(_ value: String) -> AuthError.Code? {
            refusal { try AuthHeaders.bearerToken(in: fields([("authorization", value)])) }?.code
        }
        #expect(refusal { try AuthHeaders.bearerToken(in: fields([])) }?.code == .missingToken)
        #expect(code("") == .missingToken)
        #expect(code("Bearer") == .missingToken)
        #expect(code("Bearer   ") == .missingToken)
        #expect(code("Basic dXNlcjpwYXNz") == .missingToken)
        #expect(code("Bearera.b.c") == .missingToken)
        #expect(code("a.b.c") == .missingToken)
        #expect(code("Bearer a.b.c extra") == .malformedToken)
        let two = fields([("authorization", "Bearer a.b.c"), ("authorization", "Bearer d.e.f")])
        #expect(refusal { try AuthHeaders.bearerToken(in: two) }?.code == .malformedToken)
    }
}
