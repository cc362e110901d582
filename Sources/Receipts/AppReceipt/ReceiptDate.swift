import CivilDates
import Foundation

/// The RFC 3339 timestamps of classic receipts (`2013-08-01T07:00:00Z`, also with fractional seconds or a
/// numeric offset, with or without its colon as Xcode writes it), parsed by hand: strict, allocation-free, and the same on every platform.
enum ReceiptDate {
    /// The date `text` denotes, or nil when it is not an RFC 3339 date-time.
    static func parse<Bytes: Collection<UInt8>>(_ text: Bytes) -> Date? where Bytes.Index == Int {
        let bytes = Array(text)
        guard bytes.count >= 20, bytes.count <= 40 else { return nil }
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for _ in 0..<digits {
                let byte = bytes[index]
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
                index += 1
            }
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2)
        else { return nil }
        guard (1...12).contains(month),
            (1...Int(CivilCalendar.daysIn(month: Int64(month), year: Int64(year)))).contains(day), hour < 24,
            minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offset = 0
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            // Xcode writes `+0100`; RFC 3339 says `+01:00`. Both are read.
            guard let hours = number(2) else { return nil }
            if index < bytes.count, bytes[index] == UInt8(ascii: ":") { index += 1 }
            guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = Int(CivilCalendar.daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day)))
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }
}
