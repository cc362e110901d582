import APIViews
import Foundation
import Hummingbird
import HummingbirdTesting
import Ledger
import NIOCore
import Receipts
import Testing

@testable import ShopServer

/// The purchase answer (`POST /api/v1/purchases` 200) and the access log's duration are written by hand
/// for speed; they must say what `JSONEncoder` and `String(format: "%.3f")` said.
@Suite struct PurchaseAnswerTests {
    static func purchase(_ text: String, price: Money?, storefront: String?) -> Purchase {
        Purchase(
            uid: "u-\(text)", store: .appStore, environment: .production, transactionId: "2000\(text)",
            originalTransactionId: "1000-\(text)", productId: "com.memolease.sesac1.\(text)",
            item: ItemID(kind: .background, index: 7), book: "revenue",
            purchaseDate: Date(timeIntervalSince1970: 1.5e9),
            price: price, storefront: storefront, ownershipType: .familyShared, appAccountToken: nil,
            signedDate: Date(timeIntervalSince1970: 1.6e9), evidenceSHA256Hex: "00",
            recordedAt: Date(timeIntervalSince1970: 1_700_000_000.123), state: .refunded)
    }

    @Test(arguments: JSONBodyTests.awkward, [true, false])
    func purchaseAnswerMatchesEncodable(_ text: String, duplicate: Bool) async throws {
        let priced = Self.purchase(
            text, price: Money(amountMilli: -9_223_372_036_854_775_807, currency: text), storefront: text)
        let unpriced = Self.purchase(text, price: nil, storefront: nil)
        for purchase in [priced, unpriced] {
            let result = APIBodies.PurchaseResult(purchase: .init(purchase), duplicate: duplicate)
            let handWritten = try await Self.body(of: result)
            let encoded = try JSONEncoder().encode(result)
            let parsedHandWritten = try #require(try JSONSerialization.jsonObject(with: handWritten) as? NSDictionary)
            let parsedEncoded = try #require(try JSONSerialization.jsonObject(with: encoded) as? NSDictionary)
            #expect(parsedHandWritten == parsedEncoded)
            let body = try #require(parsedHandWritten["purchase"] as? NSDictionary)
            #expect(body["storefront"] is NSNull == (purchase.storefront == nil))
            #expect(body["price"] is NSNull == (purchase.price == nil))
            #expect(body.count == 12)
            // Every key in declaration order, as `encode(to:)` lists them.
            #expect(
                JSONBodyTests.keys(handWritten)
                    == [
                        "purchase", "transactionId", "originalTransactionId", "store", "environment", "productId",
                        "item", "kind", "index", "purchaseDate", "price",
                    ]
                    + (purchase.price == nil ? [] : ["amountMilli", "currency"])
                    + ["storefront", "ownershipType", "state", "recordedAt", "duplicate"])
        }
    }

    @Test func durationAsBefore() {
        let samples: [Int64] = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 12_345, 999_999, 1_000_000, 3_600_000_123]
        for micros in samples + (0..<2000).map { _ in Int64.random(in: 0..<100_000_000) } {
            let duration = Duration.microseconds(micros) + .nanoseconds(Int64.random(in: 0..<1000))
            #expect(
                ShopResponder<RouterResponder<ShopRequestContext>>.milliseconds(duration)
                    == String(format: "%.3f", Double(micros) / 1000))
        }
    }

    /// The shortcut reads only bodies `JSONDecoder` reads the same way; every other body goes to the decoder.
    @Test func signedTransactionShortcut() throws {
        let read: [String] = [
            #"{"signedTransaction":"eyJhbGciOiJFUzI1NiJ9.eyJ0IjoxfQ.c2ln"}"#, #"{"signedTransaction":""}"#,
            "{\"signedTransaction\":\"새싹 / 🌱 \u{7F}\"}",
        ]
        let decoderOnly: [String] = [
            #"{"signedTransaction":"a\"b"}"#, #"{"signedTransaction":"a\/b"}"#, #"{"signedTransaction":"a\u0041"}"#,
            #"{ "signedTransaction":"abc"}"#, #"{"signedTransaction":"abc" }"#, #"{"signedTransaction":"abc"}  "#,
            #"{"signedTransaction":"abc","productId":"p"}"#, #"{"receipt":"abc"}"#, #"{"signedTransaction":null}"#,
            "{\"signedTransaction\":\"line\nbreak\"}", #"{"signedTransaction":"a"}{"b":"c"}"#,
            #"{"signedTransaction":"}"#, #"{"signedTransaction""#,
        ]
        for text in read {
            let buffer = ByteBuffer(string: text)
            let shortcut = try #require(APIBodies.PurchaseRequest(signedTransactionOnly: buffer))
            let decoded = try ShopServer.RequestBody.decode(APIBodies.PurchaseRequest.self, from: buffer)
            #expect(shortcut.signedTransaction == decoded.signedTransaction)
            #expect(shortcut.receipt == nil && decoded.receipt == nil)
            #expect(shortcut.productId == nil && decoded.productId == nil)
        }
        for text in decoderOnly {
            #expect(APIBodies.PurchaseRequest(signedTransactionOnly: ByteBuffer(string: text)) == nil, "\(text)")
        }
        var invalidUTF8 = ByteBuffer(string: #"{"signedTransaction":"a"#)
        invalidUTF8.writeBytes([0xC3, 0x28])
        invalidUTF8.writeString(#""}"#)
        #expect(APIBodies.PurchaseRequest(signedTransactionOnly: invalidUTF8) == nil)
        #expect(throws: InputError.self) {
            try ShopServer.RequestBody.decode(APIBodies.PurchaseRequest.self, from: invalidUTF8)
        }
    }

    static func body(of result: APIBodies.PurchaseResult) async throws -> Data {
        let router = Router()
        router.get("/purchase") { request, context in try result.response(from: request, context: context) }
        let app = Application(router: router)
        return try await app.test(.router) { client in
            try await client.execute(uri: "/purchase", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                #expect(response.headers[.contentLength] == String(response.body.readableBytes))
                return Data(response.body.readableBytesView)
            }
        }
    }
}
