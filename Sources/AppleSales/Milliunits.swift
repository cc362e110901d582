/// Apple's decimal amounts (`0.99`, `1200`, `-0.99`: digits, an optional point, no grouping) read
/// exactly into integer milliunits, never through floating point.
enum Milliunits {
    /// Why a text is not an amount.
    struct Refusal: Error {
        let reason: String
    }

    /// The largest magnitude accepted: 10^15 milliunits.
    static let maximumMagnitude: Int64 = 1_000_000_000_000_000

    /// `-?digits(.digits)?` with at most 3 decimals, or why not.
    static func parse(_ text: Substring) -> Result<Int64, Refusal> {
        var bytes = Array(text.utf8)[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            bytes = bytes.dropFirst()
        }
        let point = bytes.firstIndex(of: UInt8(ascii: "."))
        let whole = point.map { bytes[bytes.startIndex..<$0] } ?? bytes
        let fraction = point.map { bytes[bytes.index(after: $0)...] } ?? []
        guard !whole.isEmpty, whole.allSatisfy(isDigit), fraction.allSatisfy(isDigit),
            point == nil || !fraction.isEmpty
        else { return .failure(Refusal(reason: "'\(text)' is not a decimal amount")) }
        guard fraction.count <= 3 else {
            return .failure(Refusal(reason: "'\(text)' has more than 3 decimals (amounts are kept in milliunits)"))
        }
        // 12 digits: at most 10^12 − 1 units, so the milliunits fit Int64 with room to spare.
        guard whole.count <= 12 else { return .failure(Refusal(reason: "'\(text)' is too large")) }
        var milli: Int64 = 0
        for digit in whole { milli = milli * 10 + Int64(digit - UInt8(ascii: "0")) }
        milli *= 1000
        var scale: Int64 = 100
        for digit in fraction {
            milli += Int64(digit - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        guard milli <= maximumMagnitude else { return .failure(Refusal(reason: "'\(text)' is too large")) }
        return .success(negative ? -milli : milli)
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// `1234` → `1.234`, `-990` → `-0.99`, `5000` → `5`: the shortest exact decimal.
    static func text(_ milli: Int64) -> String {
        let sign = milli < 0 ? "-" : ""
        let magnitude = milli.magnitude
        let whole = magnitude / 1000
        var fraction = String(magnitude % 1000)
        if fraction == "0" { return "\(sign)\(whole)" }
        while fraction.count < 3 { fraction = "0" + fraction }
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(sign)\(whole).\(fraction)"
    }
}
