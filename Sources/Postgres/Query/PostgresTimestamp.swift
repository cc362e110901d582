import CivilDates
import Foundation

/// Text forms of `timestamptz`, `timestamp` and `date` as the server prints them with the
/// session pinned to `DateStyle=ISO` and `TimeZone=UTC` (e.g. `2024-01-02 03:04:05.123456+00`).
/// Parsed by hand: formatters are slow and locale-sensitive.
enum PostgresTimestamp {
    /// `2024-01-02 03:04:05.123456+00`, microsecond precision (the server's own).
    static func format(_ date: Date) -> String {
        let totalMicros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        // Beyond ±292,000 years Int64 microseconds overflow; clamp to what PostgreSQL accepts anyway.
        let micros = Int64(max(min(totalMicros, 9.2e18), -9.2e18))
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = CivilCalendar.civil(fromDays: days)
        let yearText = year > 0 ? pad(year, 4) : pad(1 - year, 4)
        var text = "\(yearText)-\(pad(month, 2))-\(pad(day, 2)) "
        text += "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
        if fraction != 0 { text += ".\(pad(fraction, 6))" }
        text += "+00"
        if year <= 0 { text += " BC" }
        return text
    }

    /// Parses `YYYY-MM-DD[ HH:MM:SS[.ffffff]][+HH[:MM[:SS]]|-…]`; a missing offset means UTC.
    static func parse(_ bytes: some Collection<UInt8>) -> Date? {
        var scanner = ByteScanner(Array(bytes))
        guard let year = scanner.number(minDigits: 4, maxDigits: 7), scanner.take(UInt8(ascii: "-")),
            let month = scanner.number(exactly: 2), scanner.take(UInt8(ascii: "-")),
            let day = scanner.number(exactly: 2), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var seconds = CivilCalendar.daysFromCivil(year: year, month: month, day: day) * 86_400
        var micros: Int64 = 0
        if scanner.take(UInt8(ascii: " ")) || scanner.take(UInt8(ascii: "T")) {
            guard let hour = scanner.number(exactly: 2), scanner.take(UInt8(ascii: ":")),
                let minute = scanner.number(exactly: 2), scanner.take(UInt8(ascii: ":")),
                let second = scanner.number(exactly: 2), hour <= 24, minute < 60, second <= 60
            else { return nil }
            seconds += hour * 3600 + minute * 60 + second
            if scanner.take(UInt8(ascii: ".")) {
                var digits = 0
                while let digit = scanner.digit() {
                    if digits < 6 { micros = micros * 10 + Int64(digit) }
                    digits += 1
                }
                guard digits > 0 else { return nil }
                if digits < 6 { for _ in digits..<6 { micros *= 10 } }
            }
            if let sign = scanner.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                scanner.advance()
                guard let offsetHours = scanner.number(exactly: 2) else { return nil }
                var offset = offsetHours * 3600
                if scanner.take(UInt8(ascii: ":")) {
                    guard let offsetMinutes = scanner.number(exactly: 2) else { return nil }
                    offset += offsetMinutes * 60
                    if scanner.take(UInt8(ascii: ":")) {
                        guard let offsetSeconds = scanner.number(exactly: 2) else { return nil }
                        offset += offsetSeconds
                    }
                }
                seconds -= sign == UInt8(ascii: "+") ? offset : -offset
            }
        }
        if scanner.take(UInt8(ascii: " ")) {
            // "… BC": year 1 BC is astronomical year 0.
            guard scanner.take(UInt8(ascii: "B")), scanner.take(UInt8(ascii: "C")) else { return nil }
            let yearShift =
                CivilCalendar.daysFromCivil(year: 1 - year, month: month, day: day)
                - CivilCalendar.daysFromCivil(year: year, month: month, day: day)
            seconds += yearShift * 86_400
        }
        guard scanner.atEnd else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + Double(micros) / 1_000_000)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// A tiny forward-only reader over ASCII bytes.
struct ByteScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }
    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }
    mutating func advance() { index += 1 }

    mutating func take(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        index += 1
        return true
    }

    mutating func digit() -> Int64? {
        guard let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        index += 1
        return Int64(byte - UInt8(ascii: "0"))
    }

    mutating func number(exactly count: Int) -> Int64? { number(minDigits: count, maxDigits: count) }

    mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
        let start = index
        var value: Int64 = 0
        while index - start < maxDigits, let digit = digit() { value = value * 10 + digit }
        return index - start >= minDigits ? value : nil
    }
}
