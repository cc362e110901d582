import CivilDates
import Postgres

/// Builds COPY text-format rows as bytes, fast enough for tens of millions of rows: fields are
/// appended without escaping, so only text the seeder itself makes (letters, digits, `-`, `:`,
/// `.`, `_`, JSON without backslashes) may go in; `\N` is NULL. Flushes to the COPY writer in
/// chunks of about 256 KiB.
struct CopyRowBuffer {
    private(set) var bytes: [UInt8] = []
    private var fieldsInRow = 0
    private static let flushSize = 256 * 1024
    private static let hexDigits = Array("0123456789abcdef".utf8)

    init() { bytes.reserveCapacity(Self.flushSize + 4096) }

    private mutating func separate() {
        if fieldsInRow > 0 { bytes.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
    }

    mutating func text(_ value: String) {
        separate()
        bytes.append(contentsOf: value.utf8)
    }

    mutating func int(_ value: Int64) {
        separate()
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        let start = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
    }

    mutating func int(_ value: Int) { int(Int64(value)) }

    mutating func null() {
        separate()
        bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
    }

    /// `YYYY-MM-DD HH:MM:SS.mmm+00` for milliseconds since 1970.
    mutating func timestamp(milliseconds: Int64) {
        separate()
        var days = milliseconds / 86_400_000
        var rest = milliseconds % 86_400_000
        if rest < 0 {
            rest += 86_400_000
            days -= 1
        }
        let date = CalendarDate(daysSinceEpoch: Int(days))!
        padded(date.year, 4)
        bytes.append(UInt8(ascii: "-"))
        padded(date.month, 2)
        bytes.append(UInt8(ascii: "-"))
        padded(date.day, 2)
        bytes.append(UInt8(ascii: " "))
        padded(Int(rest / 3_600_000), 2)
        bytes.append(UInt8(ascii: ":"))
        padded(Int(rest / 60_000 % 60), 2)
        bytes.append(UInt8(ascii: ":"))
        padded(Int(rest / 1000 % 60), 2)
        bytes.append(UInt8(ascii: "."))
        padded(Int(rest % 1000), 3)
        bytes.append(contentsOf: [UInt8(ascii: "+"), UInt8(ascii: "0"), UInt8(ascii: "0")])
    }

    /// A bytea in hex form (`\\x…` in COPY text, the backslash escaped).
    mutating func bytea(_ words: [UInt64]) {
        separate()
        bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "x")])
        for word in words {
            for shift in stride(from: 60, through: 0, by: -4) {
                bytes.append(Self.hexDigits[Int((word >> UInt64(shift)) & 0xF)])
            }
        }
    }

    private mutating func padded(_ value: Int, _ width: Int) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
            rest %= divisor
            divisor /= 10
        }
    }

    /// Ends the row; sends the buffer on when it is large.
    mutating func endRow(to writer: PostgresCopyWriter) async throws {
        bytes.append(UInt8(ascii: "\n"))
        fieldsInRow = 0
        if bytes.count >= Self.flushSize { try await flush(to: writer) }
    }

    mutating func flush(to writer: PostgresCopyWriter) async throws {
        guard !bytes.isEmpty else { return }
        try await writer.write(bytes)
        bytes.removeAll(keepingCapacity: true)
    }
}
