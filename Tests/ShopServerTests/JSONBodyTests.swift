import Foundation
import Hummingbird
import HummingbirdTesting
import Ledger
import Testing

@testable import ShopServer

/// The user document is written by hand (`JSONBody`); it must say exactly what the synthesized `Encodable`
/// conformance says (as parsed JSON), for any profile text the sign-up form let through.
@Suite struct JSONBodyTests {
    static let awkward = [
        "", "plain", "새싹", "quote \" and backslash \\", "line\nbreak\r\ttab", "control \u{01}\u{1F}\u{7F}",
        "emoji 🌱👩‍👩‍👧", "slash / </script>", "\u{2028}\u{2029}", "\\u0000 literally", "é (e\u{301})",
    ]

    @Test(arguments: awkward)
    func userDocumentMatchesEncodable(_ text: String) async throws {
        let profile = try UserProfile(encoding: [
            "nick": text, "phoneNumber": text, "email": text, "FCMtoken": text, "birth": text,
        ])
        let user = User(
            uid: "uid-\(text)", profile: profile, equipped: EquippedItems(face: 2, background: 0),
            registeredAt: Date(timeIntervalSince1970: 1_700_000_000.123))
        let summary = AccountSummary(
            user: user,
            inventory: Inventory(uid: user.uid, equipped: user.equipped, faces: [0, 2, 3], backgrounds: [0]),
            transactionIds: ["2000000123", text, "stub-\(text)"])
        let document = UserDocument(summary)

        let handWritten = try await Self.body(of: document)
        let encoded = try JSONEncoder().encode(document)
        let parsedHandWritten = try #require(try JSONSerialization.jsonObject(with: handWritten) as? NSDictionary)
        let parsedEncoded = try #require(try JSONSerialization.jsonObject(with: encoded) as? NSDictionary)
        #expect(parsedHandWritten == parsedEncoded)
        #expect(parsedHandWritten["nick"] as? String == text)
        #expect(parsedHandWritten.count == 27)
        // Every stored field, in declaration order (JSONEncoder on Linux writes them in hash order, a
        // different one each run; the hand-written document is stable).
        #expect(Self.keys(handWritten) == Mirror(reflecting: document).children.compactMap(\.label))
    }

    /// `_id`: the first 12 bytes of SHA-256(uid) in lower-case hex (the expected values from Python's hashlib).
    @Test func documentIdIsTheHashPrefix() {
        #expect(UserDocument.documentId("firebase-uid-1") == "5e9a469064f5e847e6a53b27")
        #expect(UserDocument.documentId("") == "e3b0c44298fc1c149afbf4c8")
        #expect(UserDocument.documentId("새싹") == "372ff6db901ebb52c7313a1b")
    }

    /// The body a router answers with.
    static func body(of document: UserDocument) async throws -> Data {
        let router = Router()
        router.get("/doc") { _, _ in document }
        let app = Application(router: router)
        return try await app.test(.router) { client in
            try await client.execute(uri: "/doc", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                return Data(response.body.readableBytesView)
            }
        }
    }

    /// The top-level keys in the order they appear.
    static func keys(_ json: Data) -> [String] {
        let text = String(decoding: json, as: UTF8.self)
        let pattern = try! Regex(#"[{,]"([A-Za-z_]+)":"#)
        return text.matches(of: pattern).compactMap { $0.output[1].substring.map(String.init) }
    }
}
