import Crypto

/// The configured admin bearer token, for `/api/v1/admin/...`. Compared in constant time: both sides are
/// hashed with SHA-256 first, so neither the content nor the length of the secret leaks through timing.
/// The secret itself is not kept, only its digest.
public struct AdminToken: Sendable, CustomStringConvertible {
    /// Shorter secrets are refused at configuration time: this one opens every admin endpoint.
    public static let minimumLength = 16

    private let digest: [UInt8]
    /// Who holds the token, recorded as the actor of every support action taken with it.
    public let label: String

    /// - Throws: when `secret` is shorter than ``minimumLength`` bytes or has whitespace or control
    ///   characters (it must survive an `Authorization: Bearer` header unchanged), or when `label`
    ///   is not 1–64 printable characters.
    public init(_ secret: String, label: String = "admin") throws(AuthConfigurationError) {
        guard (1...64).contains(label.unicodeScalars.count),
            label.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control })
        else {
            throw AuthConfigurationError("the admin token's label must be 1–64 characters without control characters")
        }
        self.label = label
        guard secret.utf8.count >= Self.minimumLength else {
            throw AuthConfigurationError("the admin token must be at least \(Self.minimumLength) bytes")
        }
        guard secret.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw AuthConfigurationError("the admin token must not contain spaces or control characters")
        }
        self.digest = Array(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Whether `presented` is the admin token.
    public func matches(_ presented: String) -> Bool {
        let other = Array(SHA256.hash(data: Array(presented.utf8)))
        var difference: UInt8 = 0
        for index in digest.indices { difference |= digest[index] ^ other[index] }
        return difference == 0
    }

    /// Never prints the secret.
    public var description: String { "AdminToken(<redacted>)" }
}
