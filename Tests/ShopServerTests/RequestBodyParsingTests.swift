import Foundation
import NIOCore
import Testing

@testable import ShopServer

/// The body checks every purchase passes, written byte by byte for speed: they must decide what the
/// plain definitions (split, trim, lowercase; percent-decoding) decide.
@Suite struct RequestBodyParsingTests {
    @Test(arguments: [
        ("application/json", "application/json", true),
        ("Application/JSON; charset=utf-8", "application/json", true),
        (" \tapplication/json \t; charset=utf-8", "application/json", true),
        ("application/json;", "application/json", true),
        ("application/jsonx", "application/json", false),
        ("application/jso", "application/json", false),
        ("application/ json", "application/json", false),
        ("text/plain; application/json", "application/json", false),
        ("", "application/json", false),
        ("application/x-www-form-urlencoded", "application/x-www-form-urlencoded", true),
        ("APPLICATION/X-WWW-FORM-URLENCODED;charset=UTF-8", "application/x-www-form-urlencoded", true),
        ("application/x-www-form-urlencodedé", "application/x-www-form-urlencoded", false),
    ])
    func mediaType(_ value: String, _ expected: String, _ matches: Bool) {
        let check: Bool =
            switch expected {
            case "application/json": RequestBody.isMediaType(value, "application/json")
            default: RequestBody.isMediaType(value, "application/x-www-form-urlencoded")
            }
        let plain = value.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        #expect(check == matches)
        #expect(check == (plain == expected))
    }

    @Test func formFieldsFromABuffer() throws {
        let body = "uid=u%2D1&signed=a+b%2Bc&empty=&%ED%95%9C=%EA%B8%80"
        let fromBuffer = try FormFields(parsing: ByteBuffer(string: body).readableBytesView)
        let fromArray = try FormFields(parsing: Array(body.utf8))
        #expect(fromBuffer.values == ["uid": "u-1", "signed": "a b+c", "empty": "", "한": "글"])
        #expect(fromArray.values == fromBuffer.values)
    }

    @Test(arguments: ["a=1&a=2", "=1", "a=%4", "a=%zz", "a=%FF", "%C3=1"])
    func formFieldsRefused(_ body: String) {
        #expect(throws: InputError.self) { try FormFields(parsing: ByteBuffer(string: body).readableBytesView) }
    }
}
