import Foundation

/// What `POST /api/v1/me` keeps as a user's profile: a flat JSON object of at most 32 keys, each
/// value a string (at most 1 KiB), a number, a boolean or null; and the sign-up fields the SeSAC user
/// document reads back (`nick`, `gender`, `email`, `phoneNumber`, `FCMtoken`, `birth`), when present,
/// of the types and within the rules of the SeSAC sign-up form. Anything else is `invalid_profile`.
package enum ProfileRules {
    static let maximumKeys = 32
    static let maximumKeyBytes = 64
    static let maximumStringBytes = 1024

    /// The sign-up fields, typed: decoding fails on a field of another type.
    private struct SignUpFields: Decodable {
        var nick: String?
        var gender: Int?
        var email: String?
        var phoneNumber: String?
        var FCMtoken: String?
        var birth: String?
    }

    package static func check(_ json: String) throws(InputError) {
        let data = Data(json.utf8)
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw refusal("the profile must be a JSON object")
        }
        guard object.count <= maximumKeys else {
            throw refusal("the profile has \(object.count) keys, over \(maximumKeys)")
        }
        for (key, value) in object {
            guard !key.isEmpty, key.utf8.count <= maximumKeyBytes, !SignUpForm.hasControlCharacters(key) else {
                throw refusal("profile keys must be 1–\(maximumKeyBytes) bytes without control characters")
            }
            switch value {
            case let text as String:
                guard text.utf8.count <= maximumStringBytes, !SignUpForm.hasControlCharacters(text) else {
                    throw refusal("\(key) must be at most \(maximumStringBytes) bytes without control characters")
                }
            case is [Any], is [String: Any]:
                throw refusal("\(key): the profile is flat; no arrays or objects")
            default:
                break  // numbers, booleans, null
            }
        }
        guard let fields = try? JSONDecoder().decode(SignUpFields.self, from: data) else {
            throw refusal("nick, email, phoneNumber, FCMtoken and birth must be strings and gender an integer")
        }
        if let nick = fields.nick, !SignUpForm.isUsableNick(nick) {
            throw refusal("nick must be 1–\(SignUpForm.nickLength.upperBound) visible characters")
        }
        if let gender = fields.gender, !(-1...1).contains(gender) { throw refusal("gender must be -1, 0 or 1") }
        if let email = fields.email, !(email.isEmpty || email.contains("@")) || (fields.email?.utf8.count ?? 0) > 254 {
            throw refusal("email must be an address of at most 254 bytes (or empty)")
        }
        if let phone = fields.phoneNumber, !SignUpForm.isValidPhoneNumber(phone) {
            throw refusal("phoneNumber must be up to 20 digits, + and -")
        }
        if let birth = fields.birth, SignUpForm.parseDate(birth) == nil {
            throw refusal("birth must be an ISO-8601 date and time")
        }
    }

    private static func refusal(_ message: String) -> InputError {
        InputError("invalid_profile", message)
    }
}
