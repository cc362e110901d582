import Ledger
import TestSupport
import Testing

@Suite("Catalog")
struct CatalogStoreTests {
    @Test("the catalog migration seeds 5 faces and 8 backgrounds with KRW prices")
    func catalogSeeded() async throws {
        try await withTestDatabase { db in
            let items = try await CatalogStore(client: db.client).allItems()
            #expect(items.count == 13)
            #expect(items.filter { $0.kind == .face }.map(\.index) == Array(0...4))
            #expect(items.filter { $0.kind == .background }.map(\.index) == Array(0...7))
            #expect(items.filter(\.isFree).count == 2)
            let face2 = try #require(items.first { $0.kind == .face && $0.index == 2 })
            #expect(face2.productId == "com.memolease.sesac1.sprout2" && face2.name == "민트 새싹")
            #expect(face2.price == Money(amountMilli: 2_500_000, currency: "KRW"))
        }
    }
}
