/// Why an operator could not be added, changed or signed in. Nothing is written then.
public struct OperatorError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case invalidName = "invalid_name"
        case invalidRole = "invalid_role"
        case weakPassword = "weak_password"
        case nameTaken = "name_taken"
        case noSuchOperator = "no_such_operator"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
