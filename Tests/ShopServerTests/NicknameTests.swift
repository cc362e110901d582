import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import ShopServer

/// A nickname is shown to other users: it must be short in bytes as well as in characters, and
/// visible, and must not turn the text around it backwards.
@Suite("Nicknames: bounded, visible, no bidi controls")
struct NicknameTests {
    static let refused: [(String, String)] = [
        ("one letter with 8,000 combining marks", "a" + String(repeating: "\u{0301}", count: 8000)),
        ("Hangul filler U+3164 alone", "\u{3164}"),
        ("Hangul filler around letters", "새\u{3164}싹"),
        ("zero-width space", "\u{200B}mint"),
        ("right-to-left override", "mint\u{202E}tnim"),
        ("left-to-right isolate", "\u{2066}mint\u{2069}"),
        ("byte order mark", "\u{FEFF}mint"),
        ("only zero-width joiners", "\u{200D}\u{200D}"),
    ]

    @Test(
        "invisible, bidi-control and over-long nicknames are refused as unusable (202)", arguments: Self.refused.indices
    )
    func refusedNick(index: Int) async throws {
        let (what, nick) = Self.refused[index]
        try await withShopServer { client, _ in
            let answer = try await client.sesac(.post, "/v1/user", uid: "nick-\(index)", form: signUpForm(nick: nick))
            #expect(answer.status.code == 202, "\(what): \(answer.status)")
        }
    }

    @Test("ordinary nicknames, emoji sequences included, are accepted")
    func acceptedNicks() async throws {
        try await withShopServer { client, _ in
            for (index, nick) in ["민트", "Mint", "새싹 친구", "👨‍👩‍👧", "❤️새싹", "café"].enumerated() {
                let answer = try await client.sesac(.post, "/v1/user", uid: "ok-\(index)", form: signUpForm(nick: nick))
                #expect(answer.status == .ok, "\(nick.debugDescription): \(answer.status)")
            }
        }
    }
}
