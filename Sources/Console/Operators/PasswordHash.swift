import Crypto
import Foundation
import _CryptoExtras

/// An operator's password as stored: scrypt (RFC 7914, BoringSSL's, through swift-crypto) with a random
/// salt, written `scrypt$<log2 N>$<r>$<p>$<salt, base64>$<hash, base64>` so that a later, costlier
/// setting still checks the passwords stored before it.
public struct PasswordHash: Sendable, Hashable, CustomStringConvertible {
    /// The cost of a new hash: N = 2^15, r = 8, p = 1 (32 MiB, about 0.1 s on one core here), the cost
    /// OWASP's password storage cheat sheet names for scrypt.
    public struct Cost: Sendable, Hashable {
        public var log2N: Int
        public var blockSize: Int
        public var parallelism: Int

        public init(log2N: Int, blockSize: Int, parallelism: Int) {
            self.log2N = log2N
            self.blockSize = blockSize
            self.parallelism = parallelism
        }

        public static let standard = Cost(log2N: 15, blockSize: 8, parallelism: 1)
        /// Tests only: the same algorithm, cheap enough to make hundreds.
        public static let testing = Cost(log2N: 10, blockSize: 8, parallelism: 1)

        var isSane: Bool {
            (1...20).contains(log2N) && (1...32).contains(blockSize) && (1...16).contains(parallelism)
        }
    }

    public let cost: Cost
    let salt: [UInt8]
    let hash: [UInt8]

    public static let minimumPasswordLength = 12
    public static let maximumPasswordBytes = 1024

    /// Hashes a new password.
    /// - Throws: ``OperatorError`` when the password is too short or too long.
    public static func make(password: String, cost: Cost = .standard) throws -> PasswordHash {
        try checkStrength(password)
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        return PasswordHash(cost: cost, salt: salt, hash: try derive(password, salt: salt, cost: cost))
    }

    /// A new password's rules: at least 12 characters, at most 1 KiB, no control characters.
    public static func checkStrength(_ password: String) throws(OperatorError) {
        guard password.count >= minimumPasswordLength else {
            throw OperatorError(.weakPassword, "a password needs at least \(minimumPasswordLength) characters")
        }
        guard password.utf8.count <= maximumPasswordBytes else {
            throw OperatorError(.weakPassword, "a password may have at most \(maximumPasswordBytes) bytes")
        }
        guard !password.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw OperatorError(.weakPassword, "a password may not contain control characters (or a line break)")
        }
    }

    /// Reads a stored hash; nil when it is not one this code wrote.
    public init?(stored: String) {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "scrypt", let log2N = Int(parts[1]), let r = Int(parts[2]),
            let p = Int(parts[3]), let salt = Data(base64Encoded: String(parts[4])),
            let hash = Data(base64Encoded: String(parts[5])), salt.count >= 16, hash.count == 32
        else { return nil }
        let cost = Cost(log2N: log2N, blockSize: r, parallelism: p)
        guard cost.isSane else { return nil }
        self.init(cost: cost, salt: Array(salt), hash: Array(hash))
    }

    init(cost: Cost, salt: [UInt8], hash: [UInt8]) {
        self.cost = cost
        self.salt = salt
        self.hash = hash
    }

    public var description: String {
        "scrypt$\(cost.log2N)$\(cost.blockSize)$\(cost.parallelism)$\(Data(salt).base64EncodedString())$"
            + Data(hash).base64EncodedString()
    }

    /// Whether `password` is this hash's password, compared in constant time.
    public func matches(_ password: String) -> Bool {
        guard password.utf8.count <= Self.maximumPasswordBytes,
            let derived = try? Self.derive(password, salt: salt, cost: cost)
        else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(derived, hash) { difference |= a ^ b }
        return difference == 0 && derived.count == hash.count
    }

    private static func derive(_ password: String, salt: [UInt8], cost: Cost) throws -> [UInt8] {
        let key = try KDF.Scrypt.deriveKey(
            from: Array(password.utf8), salt: salt, outputByteCount: 32, rounds: 1 << cost.log2N,
            blockSize: cost.blockSize, parallelism: cost.parallelism)
        return key.withUnsafeBytes { Array($0) }
    }
}
