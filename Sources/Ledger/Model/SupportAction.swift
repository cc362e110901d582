import Foundation

/// Something support did by hand, recorded append-only (`support_actions`, migration 0010): an
/// item granted to a user as compensation (book `promotional`: owned, never revenue), or such a
/// grant revoked. Says who (the admin token's label, or the operator named on the command line),
/// when and why.
public struct SupportAction: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case grant
        case revoke
    }

    public var actionId: Int64
    public var kind: Kind
    public var uid: String
    public var item: ItemID
    /// For a revoke, the grant it takes back.
    public var revokes: Int64?
    public var actor: String
    public var reason: String
    /// The purchase a compensation is about, when support named one.
    public var transactionId: String?
    public var actedAt: Date
    /// For a grant: the revoke that took it back, if any (reads fill it in).
    public var revokedBy: Int64?

    public init(
        actionId: Int64, kind: Kind, uid: String, item: ItemID, revokes: Int64?, actor: String, reason: String,
        transactionId: String?, actedAt: Date, revokedBy: Int64? = nil
    ) {
        self.actionId = actionId
        self.kind = kind
        self.uid = uid
        self.item = item
        self.revokes = revokes
        self.actor = actor
        self.reason = reason
        self.transactionId = transactionId
        self.actedAt = actedAt
        self.revokedBy = revokedBy
    }

    /// The book support grants are in: owned, never revenue.
    public static let book = "promotional"
}

/// What a support request asks for: who, why, and optionally the purchase it is about.
public struct SupportRequest: Sendable, Hashable {
    public var actor: String
    public var reason: String
    public var transactionId: String?

    public init(actor: String, reason: String, transactionId: String? = nil) {
        self.actor = actor
        self.reason = reason
        self.transactionId = transactionId
    }

    public static let maximumReasonBytes = 2000

    /// Refuses an empty or overlong actor or reason, or one with hidden characters, before anything is
    /// written.
    func validate() throws {
        let actorScalars = actor.unicodeScalars
        guard !actorScalars.isEmpty, actorScalars.count <= 64,
            actorScalars.allSatisfy({ $0.properties.generalCategory != .control })
        else {
            throw LedgerError(.invalidInput, "the actor must be 1–64 characters without control characters")
        }
        let trimmed = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw LedgerError(.invalidInput, "a reason is required") }
        // Bytes and code points, not characters: one character may carry any number of combining marks.
        // (500 code points, as the schema's CHECK counts them, are at most 2,000 bytes.)
        guard reason.utf8.count <= Self.maximumReasonBytes, reason.unicodeScalars.count <= 500 else {
            throw LedgerError(
                .invalidInput,
                "the reason must be at most 500 characters and \(Self.maximumReasonBytes) bytes, got "
                    + "\(reason.unicodeScalars.count) and \(reason.utf8.count)")
        }
        guard Validation.isVisible(reason) else {
            throw LedgerError(
                .invalidInput,
                "the reason contains invisible or bidirectional-control characters; write it in plain text")
        }
        // Lines and tabs are fine in a reason; other control characters (NUL above all, which
        // PostgreSQL's text cannot hold, and terminal escapes a support tool would print) are not.
        let allowedControls: Set<Unicode.Scalar> = ["\n", "\r", "\t"]
        guard
            reason.unicodeScalars.allSatisfy({
                $0.properties.generalCategory != .control || allowedControls.contains($0)
            })
        else {
            throw LedgerError(
                .invalidInput, "the reason contains control characters (only line breaks and tabs are allowed)")
        }
        if let transactionId { try Validation.identifier(transactionId, what: "transactionId") }
    }
}
