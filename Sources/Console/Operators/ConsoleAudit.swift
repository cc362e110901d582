import Foundation
import Postgres

/// The console's record of every sign-in and every action (`console_events`, migration 0020): who,
/// from where, what, about what. Append-only.
public struct ConsoleAudit: Sendable {
    let client: PostgresClient
    let clock: @Sendable () -> Date

    public init(client: PostgresClient, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.client = client
        self.clock = clock
    }

    /// One recorded event.
    public struct Event: Sendable, Hashable {
        public var eventId: Int64
        public var at: Date
        public var action: String
        public var operatorName: String
        public var address: String?
        public var target: String?
        public var detail: String?
    }

    @discardableResult
    func record(
        _ action: String, by operatorName: String, address: String?, target: String? = nil, detail: String? = nil,
        settling attempt: Int64? = nil
    ) async throws -> Int64 {
        try await client.query(
            """
            INSERT INTO console_events (at, action, operator, address, target, detail, attempt_id)
            VALUES (\(clock()), \(action)::text, \(String(operatorName.prefix(200)))::text, \(address)::text,
                    \(target.map { String($0.prefix(200)) })::text, \(detail.map { String($0.prefix(2000)) })::text,
                    \(attempt))
            RETURNING event_id
            """
        ).single().decode(Int64.self, at: 0)
    }

    /// The newest events, newest first; only those about `target` when given.
    public func recent(limit: Int = 100, target: String? = nil) async throws -> [Event] {
        try await client.query(
            """
            SELECT event_id, at, action, operator, address, target, detail FROM console_events
            WHERE (\(target)::text IS NULL OR target = \(target)::text)
            ORDER BY event_id DESC LIMIT \(limit)
            """
        ).map { row in
            let (id, at, action, name, address, target, detail) = try row.decode(
                (Int64, Date, String, String, String?, String?, String?).self)
            return Event(
                eventId: id, at: at, action: action, operatorName: name, address: address, target: target,
                detail: detail)
        }
    }
}
