import ShopServer

/// `application/x-www-form-urlencoded` bodies of the SeSAC surface. Invariants: the fields parsed survive
/// a round trip (each name and value percent-encoded again parses to the same fields); an integer field read
/// is the decimal number its text says, of at most nine digits.
struct FormBodyFuzzer: Sendable {
    /// The integer fields the SeSAC routes read.
    static let integerFields = ["gender", "sesac", "background"]

    func run(_ bytes: [UInt8]) -> FuzzOutcome {
        let form: FormFields
        do {
            form = try FormFields(parsing: bytes)
        } catch {
            return .refused(error.code)
        }
        let encoded = form.values.map { Self.percentEncoded($0.key) + "=" + Self.percentEncoded($0.value) }
        do {
            let again = try FormFields(parsing: Array(encoded.joined(separator: "&").utf8))
            invariant(again.values == form.values, "the fields did not survive a round trip: \(form.values)")
        } catch {
            invariant(false, "the fields, encoded again, do not parse (\(error)): \(form.values)")
        }
        for name in Self.integerFields {
            guard let value = try? form.requiredInteger(name) else { continue }
            invariant(Int(form[name] ?? "") == value, "\(name) read as \(value) from \(form[name] ?? "nothing")")
            invariant(abs(value) <= 999_999_999, "\(name) read as \(value), over nine digits")
        }
        _ = try? SignUpForm(form)
        return .accepted
    }

    /// Every byte but ASCII letters and digits as `%XX`.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
