import HTTPTypes

/// Where each surface carries its token. Takes `HTTPFields` (Hummingbird's `request.headers`).
public enum AuthHeaders {
    /// The SeSAC surface's header: the raw Firebase ID token, no scheme.
    public static let idToken = HTTPField.Name("idtoken")!

    /// The token in the `idtoken` header (SeSAC surface), surrounding spaces removed.
    public static func sesacToken(in headers: HTTPFields) throws(AuthError) -> String {
        let token = trimmed(try singleValue(of: idToken, in: headers))
        guard !token.isEmpty else { throw AuthError(.missingToken, "the idtoken header is empty") }
        return String(token)
    }

    /// The token of `Authorization: Bearer <token>` (JSON surface and admin endpoints). The scheme is
    /// case-insensitive; one or more spaces may separate it from the token.
    public static func bearerToken(in headers: HTTPFields) throws(AuthError) -> String {
        let value = trimmed(try singleValue(of: .authorization, in: headers))
        guard !value.isEmpty else { throw AuthError(.missingToken, "the Authorization header is empty") }
        let scheme = value.prefix { !isSpace($0) }
        guard scheme.utf8.count == 6, scheme.lowercased() == "bearer" else {
            throw AuthError(.missingToken, "the Authorization header does not carry a Bearer token")
        }
        let token = value[scheme.endIndex...].drop(while: isSpace)
        guard !token.isEmpty else {
            throw AuthError(.missingToken, "the Authorization header has no token after Bearer")
        }
        guard !token.contains(where: isSpace) else {
            throw AuthError(.malformedToken, "the Bearer token contains whitespace")
        }
        return String(token)
    }

    private static func singleValue(of name: HTTPField.Name, in headers: HTTPFields) throws(AuthError) -> String {
        let values = headers[values: name]
        guard let first = values.first else {
            throw AuthError(.missingToken, "the request has no \(name.canonicalName) header")
        }
        guard values.count == 1 else {
            throw AuthError(.malformedToken, "the request has more than one \(name.canonicalName) header")
        }
        return first
    }

    private static func isSpace(_ character: Character) -> Bool { character == " " || character == "\t" }

    private static func trimmed(_ value: String) -> Substring {
        var start = value.startIndex
        var end = value.endIndex
        while start < end, isSpace(value[start]) { start = value.index(after: start) }
        while end > start, isSpace(value[value.index(before: end)]) { end = value.index(before: end) }
        return value[start..<end]
    }
}
