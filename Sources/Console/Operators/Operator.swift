import Foundation

/// A person who signs in to the console, with the one role that decides which pages they see.
public struct Operator: Sendable, Hashable {
    /// What an operator may do. Each role includes the ones before it: finance sees what support sees,
    /// and an admin everything.
    public enum Role: String, Sendable, Hashable, CaseIterable, Comparable {
        /// Customers: look up, grant and revoke with a reason, ask Apple for a restore history.
        case support
        /// And money: reports, the reporting currency, Apple's sales reconciliation, CSV.
        case finance
        /// And the shop: the catalog, webhook endpoints and replays, the App Store sync, reconciliation.
        case admin

        private var rank: Int {
            switch self {
            case .support: 0
            case .finance: 1
            case .admin: 2
            }
        }

        public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rank < rhs.rank }
    }

    public var operatorId: Int64
    public var name: String
    public var role: Role
    public var createdAt: Date
    public var passwordChangedAt: Date
    public var disabledAt: Date?

    public var isActive: Bool { disabledAt == nil }

    /// A name: 1-64 of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit (the schema's CHECK).
    public static func checkName(_ name: String) throws(OperatorError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789._-")
        guard let first = name.first, first.isLetter || first.isNumber, name.count <= 64,
            name.allSatisfy({ allowed.contains($0) })
        else {
            throw OperatorError(
                .invalidName, "an operator name is 1-64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
        }
    }
}
