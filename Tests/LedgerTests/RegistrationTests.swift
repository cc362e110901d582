import Foundation
import Postgres
import TestSupport
import Testing

@testable import Ledger

@Suite("Users: registration and reads")
struct RegistrationTests {
    @Test("registering is idempotent, keeps the first profile, and owns and equips the free items")
    func registerIsIdempotent() async throws {
        try await withLedger { db, ledger in
            #expect(try await ledger.register(uid: "alice", profile: testProfile) == .registered)
            let other = try UserProfile(json: #"{"nick":"other"}"#)
            #expect(try await ledger.register(uid: "alice", profile: other) == .alreadyRegistered)

            let user = try #require(try await ledger.user("alice"))
            struct Nick: Decodable { let nick: String }
            #expect(try user.profile.decode(Nick.self).nick == "새싹")
            #expect(user.equipped == .initial)

            let inventory = try await ledger.inventory(of: "alice")
            #expect(inventory.faces == [0])
            #expect(inventory.backgrounds == [0])
            #expect(inventory.equipped == .initial)
            // Two free grants and their history, written once despite two registrations.
            #expect(try await scalar(db.client, "SELECT count(*) FROM grant_events WHERE uid = 'alice'") == 2)
            #expect(try await ledger.transactionIds(of: "alice") == [])
            #expect(try await ledger.purchaseHistory(of: "alice") == [])
        }
    }

    @Test("concurrent registrations of one uid make one user")
    func concurrentRegistrations() async throws {
        try await withLedger { db, ledger in
            let outcomes = try await withThrowingTaskGroup(of: RegistrationOutcome.self) { group in
                for _ in 0..<16 { group.addTask { try await ledger.register(uid: "bob", profile: testProfile) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .registered }.count == 1)
            #expect(outcomes.filter { $0 == .alreadyRegistered }.count == 15)
            #expect(try await scalar(db.client, "SELECT count(*) FROM grants WHERE uid = 'bob'") == 2)
        }
    }

    @Test("reads of an unregistered uid say so")
    func unregisteredReads() async throws {
        try await withLedger { _, ledger in
            #expect(try await ledger.user("nobody") == nil)
            for read in [
                { _ = try await ledger.inventory(of: "nobody") },
                { _ = try await ledger.transactionIds(of: "nobody") },
                { _ = try await ledger.purchaseHistory(of: "nobody") },
            ] as [@Sendable () async throws -> Void] {
                let error = try await #require(throws: LedgerError.self) { try await read() }
                #expect(error.code == .userNotRegistered)
            }
        }
    }

    @Test("bad uids and profiles are refused before anything is written")
    func badInput() async throws {
        try await withLedger { db, ledger in
            for uid in ["", String(repeating: "x", count: 129), "a\u{0}b", "tab\there"] {
                let error = try await #require(throws: LedgerError.self) {
                    try await ledger.register(uid: uid, profile: testProfile)
                }
                #expect(error.code == .invalidInput)
            }
            #expect(throws: LedgerError.self) { try UserProfile(json: "[1,2]") }
            #expect(throws: LedgerError.self) { try UserProfile(json: "not json") }
            #expect(try await scalar(db.client, "SELECT count(*) FROM users") == 0)
        }
    }
}
