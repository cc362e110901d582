import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Postgres
import Receipts
import TestSupport
import Testing

@testable import ShopServer

/// What the existing iOS clients decode from `GET /v1/user` and `/v1/user/shop/myinfo`: non-optional
/// fields, so a missing one or a wrong type fails the decode (as it would crash the client's screen).
struct ClientUserDocument: Decodable {
    let _id: String
    let __v: Int
    let uid, phoneNumber, email, FCMtoken, nick: String
    let birth: String
    let gender: Int
    let study: String
    let comment: [String]
    let reputation: [Int]
    let sesac: Int
    let sesacCollection: [Int]
    let background: Int
    let backgroundCollection: [Int]
    let purchaseToken, transactionId, reviewedBefore: [String]
    let reportedNum: Int
    let reportedUser: [String]
    let dodgepenalty, dodgeNum, ageMin, ageMax, searchable: Int
    let createdAt: String
}

@Suite("SeSAC-compatible surface")
struct SeSACSurfaceTests {
    @Test("sign-up: 200 registered, 201 already, 202 unusable nickname, 501 missing or invalid fields, 401 no token")
    func signUp() async throws {
        try await withShopServer { client, db in
            #expect(try await client.sesac(.post, "/v1/user", uid: "u1", form: signUpForm()).status == .ok)
            #expect(try await client.sesac(.post, "/v1/user", uid: "u1", form: signUpForm()).status == .created)
            let before = try await ledgerRowCounts(db.client)
            for nick in ["", "열한글자가넘는새싹닉네임", "   ", "tab\there"] {
                let answer = try await client.sesac(.post, "/v1/user", uid: "u2", form: signUpForm(nick: nick))
                // An empty nick is a missing field (501); the rest are unusable nicknames (202).
                #expect(answer.status.code == (nick.isEmpty ? 501 : 202), "nick \(nick.debugDescription)")
            }
            for field in ["phoneNumber", "FCMtoken", "nick", "birth", "email", "gender"] {
                let answer = try await client.sesac(.post, "/v1/user", uid: "u2", form: signUpForm(dropping: field))
                #expect(answer.status.code == 501, "without \(field)")
            }
            for (field, value) in [
                ("gender", "male"), ("gender", "7"), ("gender", "99999999999999999999"), ("birth", "yesterday"),
                ("phoneNumber", "'; DROP TABLE users; --"), ("email", "no-at-sign"),
            ] {
                let answer = try await client.sesac(
                    .post, "/v1/user", uid: "u2", form: signUpForm(replacing: [field: value]))
                #expect(answer.status.code == 501, "\(field)=\(value)")
            }
            #expect(try await client.sesac(.post, "/v1/user", form: signUpForm()).status == .unauthorized)
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }

    @Test("login and myinfo: 406 before sign-up, then the full user document the clients decode")
    func userDocument() async throws {
        try await withShopServer { client, _ in
            #expect(try await client.sesac(.get, "/v1/user", uid: "u1").status.code == 406)
            #expect(try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "u1").status.code == 406)
            try await client.signUp("u1", nick: "민트")
            for path in ["/v1/user", "/v1/user/shop/myinfo"] {
                let answer = try await client.sesac(.get, path, uid: "u1")
                #expect(answer.status == .ok)
                let document = try answer.decode(ClientUserDocument.self)
                #expect(document.uid == "u1" && document.nick == "민트" && document.gender == 1)
                #expect(document.phoneNumber == "+821012345678" && document.email == "sprout@example.com")
                #expect(document.FCMtoken == "fcm-token-1" && document.birth == "1994-11-05T08:15:30.000Z")
                #expect(document.sesac == 0 && document.background == 0)
                #expect(document.sesacCollection == [0] && document.backgroundCollection == [0])
                #expect(document.transactionId == [] && document.purchaseToken == [])
                #expect(document._id.count == 24 && document._id.allSatisfy(\.isHexDigit))
                #expect(document.reputation.count == 9)
                #expect(
                    ISO8601DateFormatter().date(
                        from: document.createdAt.replacingOccurrences(
                            of: #"\.\d+"#, with: "", options: .regularExpression)) != nil)
            }
        }
    }

    @Test("buy with a stub receipt: 200, again 200 (same transaction), then the item and its transaction id are listed")
    func purchase() async throws {
        try await withShopServer { client, db in
            try await client.signUp("u1")
            let receipt = ServerTest.stubReceipt(product(.face(2)), transaction: "stub-t1")
            let form = [("receipt", receipt), ("product", product(.face(2)))]
            #expect(try await client.sesac(.post, "/v1/user/shop/ios", uid: "u1", form: form).status == .ok)
            let counts = try await ledgerRowCounts(db.client)
            #expect(try await client.sesac(.post, "/v1/user/shop/ios", uid: "u1", form: form).status == .ok)
            #expect(try await ledgerRowCounts(db.client) == counts)
            let document = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "u1").decode(
                ClientUserDocument.self)
            #expect(document.sesacCollection == [0, 2])
            #expect(document.transactionId == ["stub-t1"])
            #expect(document.sesac == 0, "buying does not equip")
            // A StoreKit 2 signed transaction in the receipt field works as well.
            let jws = ServerTest.signedTransaction(product(.background(7)))
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "u1",
                    form: [("receipt", jws), ("product", product(.background(7)))]
                ).status == .ok)
            #expect(
                try await client.sesac(.get, "/v1/user", uid: "u1").decode(ClientUserDocument.self).backgroundCollection
                    == [0, 7])
        }
    }

    @Test("receipt validation failures are 201 and write nothing; a missing field is 501; not signed up is 406")
    func purchaseRefusals() async throws {
        try await withShopServer { client, db in
            try await client.signUp("u1")
            try await client.signUp("u2")
            let owned = ServerTest.stubReceipt(product(.face(1)), transaction: "stub-owned")
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "u1", form: [("receipt", owned), ("product", product(.face(1)))]
                ).status == .ok)
            let before = try await ledgerRowCounts(db.client)

            let brokenAppReceipt = Data(
                [0x30, 0x80, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
                    + Array(repeating: 0, count: 40)
            ).base64EncodedString()
            let unsignedStub = ServerTest.stubReceipt(product(.face(3))).components(separatedBy: "signature:")[0]
            let header = TestPKI.base64URL(Data(#"{"alg":"none"}"#.utf8))
            let payload = TestPKI.base64URL(
                Data(#"{"transactionId":"1","productId":"com.memolease.sesac1.sprout3"}"#.utf8))
            let cases: [(String, String, String)] = [
                ("another user's transaction", owned, product(.face(1))),
                ("product not in the receipt", ServerTest.stubReceipt(product(.face(3))), product(.face(4))),
                (
                    "unknown product", ServerTest.stubReceipt("com.memolease.sesac1.sprout9"),
                    "com.memolease.sesac1.sprout9"
                ),
                ("unsigned stub", unsignedStub, product(.face(3))),
                ("broken classic app receipt", brokenAppReceipt, product(.face(3))),
                (
                    "classic app receipt without the product", ServerTest.classicReceipt([(product(.face(4)), "c-9")]),
                    product(.face(3))
                ),
                (
                    "classic app receipt from Xcode",
                    ServerTest.classicReceipt([(product(.face(3)), "c-8")], type: "Xcode"), product(.face(3))
                ),
                ("alg none JWS", "\(header).\(payload).", product(.face(3))),
                ("garbage", "not a receipt at all", product(.face(3))),
                ("injection", "'; DELETE FROM purchases; --", "' OR '1'='1"),
                ("JWS for another app", ServerTest.pki.sign(["bundleId": "other.app"]), product(.face(3))),
            ]
            for (label, receipt, productId) in cases {
                let answer = try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "u2", form: [("receipt", receipt), ("product", productId)])
                #expect(answer.status == .created, "\(label): \(answer.status) \(answer.body)")
            }
            #expect(
                try await client.sesac(.post, "/v1/user/shop/ios", uid: "u2", form: [("receipt", owned)]).status.code
                    == 501)
            #expect(
                try await client.sesac(.post, "/v1/user/shop/ios", uid: "u2", form: [("product", product(.face(1)))])
                    .status.code == 501)
            let fresh = ServerTest.stubReceipt(product(.face(4)))
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "nobody",
                    form: [("receipt", fresh), ("product", product(.face(4)))]
                ).status.code == 406)
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/ios", token: "forged.token.value",
                    form: [("receipt", fresh), ("product", product(.face(4)))]
                ).status == .unauthorized)
            #expect(try await ledgerRowCounts(db.client) == before)
            #expect(
                try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "u2").decode(ClientUserDocument.self)
                    .sesacCollection == [0])
        }
    }

    @Test("equip: 200 owned, 201 not owned, 501 not an integer or no such item, 406 not signed up")
    func equip() async throws {
        try await withShopServer { client, db in
            try await client.signUp("u1")
            let receipt = ServerTest.stubReceipt(product(.background(3)))
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "u1",
                    form: [("receipt", receipt), ("product", product(.background(3)))]
                ).status == .ok)
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/item", uid: "u1", form: [("sesac", "0"), ("background", "3")]
                ).status == .ok)
            var document = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "u1").decode(
                ClientUserDocument.self)
            #expect(document.sesac == 0 && document.background == 3)

            let before = try await ledgerRowCounts(db.client)
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/item", uid: "u1", form: [("sesac", "2"), ("background", "3")]
                ).status == .created)
            for (face, background) in [
                ("x", "0"), ("1.5", "0"), ("0", "99"), ("9", "0"), ("-1", "0"), ("0", "99999999999999999999"),
                ("0", ""),
            ] {
                let answer = try await client.sesac(
                    .post, "/v1/user/shop/item", uid: "u1", form: [("sesac", face), ("background", background)])
                #expect(answer.status.code == 501, "sesac=\(face) background=\(background)")
            }
            #expect(
                try await client.sesac(.post, "/v1/user/shop/item", uid: "u1", form: [("sesac", "0")]).status.code
                    == 501)
            #expect(
                try await client.sesac(
                    .post, "/v1/user/shop/item", uid: "nobody", form: [("sesac", "0"), ("background", "0")]
                ).status.code == 406)
            #expect(
                try await client.sesac(.post, "/v1/user/shop/item", form: [("sesac", "0"), ("background", "0")]).status
                    == .unauthorized)
            #expect(try await ledgerRowCounts(db.client) == before)
            document = try await client.sesac(.get, "/v1/user/shop/myinfo", uid: "u1").decode(ClientUserDocument.self)
            #expect(document.sesac == 0 && document.background == 3)
        }
    }

    @Test(
        "bodies: values sent as Int or String decode alike, invalid UTF-8 / bad escapes / wrong content type are 501, oversized 413"
    )
    func bodies() async throws {
        try await withShopServer { client, db in
            try await client.signUp("u1")
            // sesac/background as the clients send them: `+` for spaces, leading zeros are still integers.
            #expect(
                try await client.send(
                    .post, "/v1/user/shop/item",
                    headers: [
                        HTTPField.Name("idtoken")!: "dev:u1",
                        .contentType: "application/x-www-form-urlencoded; charset=utf-8",
                    ], body: Array("sesac=00&background=0".utf8)
                ).status == .ok)
            let before = try await ledgerRowCounts(db.client)
            let headers: HTTPFields = [
                HTTPField.Name("idtoken")!: "dev:u9", .contentType: "application/x-www-form-urlencoded",
            ]
            var invalidUTF8 =
                Array("phoneNumber=1&FCMtoken=a&nick=".utf8) + [0xFF, 0xFE]
                + Array("&birth=1994-11-05T08:15:30.000Z&email=&gender=1".utf8)
            #expect(try await client.send(.post, "/v1/user", headers: headers, body: invalidUTF8).status.code == 501)
            invalidUTF8 = Array(
                "phoneNumber=1&FCMtoken=a&nick=%FF%FE&birth=1994-11-05T08:15:30.000Z&email=&gender=1".utf8)
            #expect(try await client.send(.post, "/v1/user", headers: headers, body: invalidUTF8).status.code == 501)
            #expect(
                try await client.send(.post, "/v1/user", headers: headers, body: Array("nick=%G1".utf8)).status.code
                    == 501)
            #expect(
                try await client.send(.post, "/v1/user", headers: headers, body: Array("nick=a&nick=b".utf8)).status
                    .code == 501)
            #expect(
                try await client.sesac(
                    .post, "/v1/user", uid: "u9", form: signUpForm(), contentType: "application/json"
                ).status.code == 501)
            let huge = [("receipt", String(repeating: "A", count: 70_000)), ("product", product(.face(1)))]
            #expect(
                try await client.sesac(.post, "/v1/user/shop/ios", uid: "u1", form: huge).status == .contentTooLarge)
            #expect(try await ledgerRowCounts(db.client) == before)
        }
    }
}
