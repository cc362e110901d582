import Foundation

/// How long a response may be used before it must be fetched again, read from its headers as a cache
/// would (RFC 9111 §4.2.1): `Cache-Control: max-age` less `Age`; `no-cache` or `no-store` mean at once;
/// without `max-age`, `Expires` less `Date`. `nil` when the headers say nothing usable.
enum HTTPFreshness {
    static func lifetime(cacheControl: String?, age: String?, expires: String?, date: String?) -> TimeInterval? {
        if let cacheControl {
            var maxAge: TimeInterval?
            for directive in cacheControl.split(separator: ",") {
                let parts = directive.split(separator: "=", maxSplits: 1)
                let name = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
                switch name {
                case "no-cache", "no-store":
                    return 0
                case "max-age":
                    guard parts.count == 2 else { continue }
                    let value = parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(
                        in: CharacterSet(charactersIn: "\""))
                    // A delta-seconds is digits only; too many of them is "a very long time" (RFC 9111 §1.2.2).
                    guard !value.isEmpty, value.allSatisfy(\.isASCIIDigit) else { continue }
                    maxAge = value.count > 9 ? 999_999_999 : TimeInterval(value)
                default:
                    continue
                }
            }
            if let maxAge {
                let used = age.flatMap { text -> TimeInterval? in
                    let value = text.trimmingCharacters(in: .whitespaces)
                    guard !value.isEmpty, value.count <= 9, value.allSatisfy(\.isASCIIDigit) else { return nil }
                    return TimeInterval(value)
                }
                return max(0, maxAge - (used ?? 0))
            }
        }
        guard let expires else { return nil }
        // An Expires that is no date (often "0" or "-1") means already expired.
        guard let expiry = httpDate(expires) else { return 0 }
        guard let sent = date.flatMap(httpDate) else { return nil }
        return max(0, expiry.timeIntervalSince(sent))
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form HTTP/1.1 senders must use.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
