import Foundation
import Ledger

/// The SeSAC sign-up form (`POST /v1/user`): `phoneNumber, FCMtoken, nick, birth, email, gender`, kept
/// as the user's profile. Field names and JSON keys are the clients'.
package struct SignUpForm: Codable, Sendable, Equatable {
    var phoneNumber: String
    var FCMtoken: String
    var nick: String
    /// ISO-8601, as the client sent it.
    var birth: String
    var email: String
    /// The SeSAC clients send 0 (female), 1 (male) or -1 (not chosen).
    var gender: Int

    static let nickLength = 1...10

    /// Reads and checks the form. Missing or invalid fields are input errors (501); the nickname is
    /// checked separately (``hasUsableNick``: 202).
    package init(_ form: FormFields) throws(InputError) {
        phoneNumber = try form.required("phoneNumber")
        FCMtoken = try form.required("FCMtoken")
        nick = try form.required("nick")
        birth = try form.required("birth")
        guard let email = form["email"] else { throw InputError.missingField("email") }
        self.email = email
        gender = try form.requiredInteger("gender")

        guard Self.isValidPhoneNumber(phoneNumber) else {
            throw InputError("invalid_field", "phoneNumber must be up to 20 digits, + and -")
        }
        guard FCMtoken.utf8.count <= 4096, !Self.hasControlCharacters(FCMtoken) else {
            throw InputError("invalid_field", "FCMtoken must be at most 4096 bytes without control characters")
        }
        guard Self.parseDate(birth) != nil else {
            throw InputError("invalid_field", "birth must be an ISO-8601 date and time, e.g. 1994-11-05T08:15:30.000Z")
        }
        guard email.utf8.count <= 254, !Self.hasControlCharacters(email), email.isEmpty || email.contains("@") else {
            throw InputError("invalid_field", "email must be an address of at most 254 bytes (or empty)")
        }
        guard (-1...1).contains(gender) else { throw InputError("invalid_field", "gender must be -1, 0 or 1") }
    }

    /// The most UTF-8 bytes a nickname may take: ten characters of four bytes each. Characters are
    /// graphemes, and one grapheme may hold any number of combining marks.
    static let nickMaximumBytes = 40

    /// A nickname of 1–10 characters and at most 40 bytes, not blank, without control characters,
    /// and visible: no invisible (default-ignorable, e.g. U+200B, U+3164 HANGUL FILLER, U+FEFF) or
    /// bidi-control (U+202A–U+202E, U+2066–U+2069) scalars, but for the joiner and variation selector
    /// inside emoji sequences.
    var hasUsableNick: Bool { Self.isUsableNick(nick) }

    static func isUsableNick(_ nick: String) -> Bool {
        nickLength.contains(nick.count) && nick.utf8.count <= nickMaximumBytes
            && !nick.allSatisfy(\.isWhitespace) && !hasControlCharacters(nick) && Validation.isVisible(nick)
    }

    static func isValidPhoneNumber(_ phoneNumber: String) -> Bool {
        phoneNumber.utf8.count <= 20
            && phoneNumber.utf8.allSatisfy {
                $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0)
            }
    }

    static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    static func parseDate(_ text: String) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        return (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}
