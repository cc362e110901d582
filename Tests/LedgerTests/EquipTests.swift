import Foundation
import Postgres
import TestSupport
import Testing

@testable import Ledger

@Suite("Equipping items")
struct EquipTests {
    @Test("owned items are equipped; otherwise nothing changes and the outcome names what is not owned")
    func equip() async throws {
        try await withLedger { _, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            _ = try await ledger.recordPurchase(makeTransaction("t1", item: .face(2)), for: "alice")
            _ = try await ledger.recordPurchase(makeTransaction("t2", item: .background(7)), for: "alice")
            #expect(
                try await ledger.equip(face: 2, background: 7, for: "alice")
                    == .equipped(EquippedItems(face: 2, background: 7)))
            #expect(try await ledger.equip(face: 3, background: 7, for: "alice") == .notOwned([.face(3)]))
            #expect(try await ledger.equip(face: 2, background: 1, for: "alice") == .notOwned([.background(1)]))
            #expect(
                try await ledger.equip(face: 4, background: 6, for: "alice") == .notOwned([.face(4), .background(6)]))
            #expect(try await ledger.inventory(of: "alice").equipped == EquippedItems(face: 2, background: 7))
            #expect(try await ledger.equip(face: 0, background: 0, for: "alice") == .equipped(.initial))
        }
    }

    @Test("items the catalog does not have, and unregistered users, are errors")
    func errors() async throws {
        try await withLedger { _, ledger in
            _ = try await ledger.register(uid: "alice", profile: testProfile)
            for (face, background) in [(5, 0), (0, 8), (-1, 0), (0, 1 << 40)] {
                let error = try await #require(throws: LedgerError.self) {
                    try await ledger.equip(face: face, background: background, for: "alice")
                }
                #expect(error.code == .noSuchItem)
            }
            let error = try await #require(throws: LedgerError.self) {
                try await ledger.equip(face: 0, background: 0, for: "bob")
            }
            #expect(error.code == .userNotRegistered)
            #expect(try await ledger.inventory(of: "alice").equipped == .initial)
        }
    }

    @Test("equip racing a refund of the item never leaves an unowned item equipped")
    func equipRacingRefund() async throws {
        try await withLedger(maximumConnections: 4) { _, ledger in
            for round in 0..<30 {
                let uid = "racer\(round)"
                _ = try await ledger.register(uid: uid, profile: testProfile)
                _ = try await ledger.recordPurchase(makeTransaction("eq\(round)", item: .face(4)), for: uid)
                async let equipped = ledger.equip(face: 4, background: 0, for: uid)
                async let refunded = ledger.recordRefundEvent(
                    makeRefundEvent("eqr\(round)", .refund, for: "eq\(round)"))
                _ = try await (equipped, refunded)
                let inventory = try await ledger.inventory(of: uid)
                #expect(inventory.faces == [0])
                #expect(inventory.equipped.face == 0, "round \(round)")
            }
        }
    }
}
