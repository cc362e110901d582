import CivilDates
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A log handler writing one JSON object per line (`--log-format json`), for log collectors that parse
/// lines rather than guess at text:
///
/// ```json
/// {"timestamp":"2026-11-27T03:45:12.123Z","level":"info","message":"request","request_id":"…","label":"shopledger","method":"GET",…}
/// ```
///
/// `timestamp` is ISO 8601 in UTC with milliseconds; `request_id` is there when the log is about a
/// request (Hummingbird's `hb.request.id`, the id `x-request-id` answers with); then `label`, and each
/// metadata entry as a key of its own (nested metadata as JSON objects and arrays, other values as
/// strings; a key that would clash with the fields above gets a leading `_`). Strings are escaped so
/// that a line never breaks: quotes, backslashes and control characters (line breaks too) are escaped,
/// other characters written as UTF-8.
///
/// Written by hand into a byte buffer (no `JSONEncoder`, no `DateFormatter`): the request log line is
/// on every request's path.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable ([UInt8]) -> Void

    /// The metadata key Hummingbird's request contexts carry the request id in.
    public static let requestIdKey = "hb.request.id"
    /// The fields every line has, which metadata keys must not replace. `error`, the field of an error
    /// logged with the event (`logger.error(…, error: e)`), is reserved only on lines that have one: the
    /// `error` metadata the code logs its failures with keeps its name everywhere else.
    static let reservedKeys: Set<String> = ["timestamp", "level", "message", "request_id", "label"]

    /// A handler writing each line with `write` (a whole line, newline included, per call).
    public init(
        label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider,
        write: @escaping @Sendable ([UInt8]) -> Void
    ) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.write = write
    }

    /// A handler writing to standard error, each line with one `write(2)` (whole lines, even from
    /// several threads, as long as a line fits a pipe's atomic size).
    public static func standardError(label: String) -> JSONLogHandler {
        JSONLogHandler(label: label) { bytes in writeAll(bytes, to: 2) }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                #if canImport(Glibc)
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                #else
                let written = Darwin.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                #endif
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        write(line(event: event, at: Self.now()))
    }

    /// The line for `event` at `time` (seconds and nanoseconds since 1970), newline included.
    func line(event: LogEvent, at time: (seconds: Int, nanoseconds: Int)) -> [UInt8] {
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty {
            merged.merge(provided) { _, new in new }
        }
        if let own = event.metadata, !own.isEmpty {
            merged.merge(own) { _, new in new }
        }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(contentsOf: #"{"timestamp":""#.utf8)
        Self.appendTimestamp(time, to: &out)
        out.append(contentsOf: #"","level":""#.utf8)
        out.append(contentsOf: event.level.rawValue.utf8)
        out.append(contentsOf: #"","message":"#.utf8)
        Self.appendString(event.message.description, to: &out)
        if let id = merged.removeValue(forKey: Self.requestIdKey) {
            out.append(contentsOf: #","request_id":"#.utf8)
            Self.appendString(id.description, to: &out)
        }
        out.append(contentsOf: #","label":"#.utf8)
        Self.appendString(label, to: &out)
        if let error = event.error {
            out.append(contentsOf: #","error":"#.utf8)
            Self.appendString(String(describing: error), to: &out)
        }
        // Sorted, so that lines of one kind read alike.
        for key in merged.keys.sorted() {
            out.append(UInt8(ascii: ","))
            let clashes = Self.reservedKeys.contains(key) || (key == "error" && event.error != nil)
            Self.appendString(clashes ? "_" + key : key, to: &out)
            out.append(UInt8(ascii: ":"))
            Self.appendValue(merged[key]!, to: &out)
        }
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    /// The current time, from the system's real-time clock (a Double holds it to the microsecond).
    static func now() -> (seconds: Int, nanoseconds: Int) {
        let time = Date().timeIntervalSince1970
        let seconds = time.rounded(.down)
        return (Int(seconds), min(999_999_999, Int(((time - seconds) * 1e9).rounded(.down))))
    }

    /// `2026-11-27T03:45:12.123Z`: the civil date from days since 1970 (``CivilCalendar``), no formatter,
    /// no time zone database.
    static func appendTimestamp(_ time: (seconds: Int, nanoseconds: Int), to out: inout [UInt8]) {
        let days = time.seconds >= 0 ? time.seconds / 86_400 : (time.seconds - 86_399) / 86_400
        let secondOfDay = time.seconds - days * 86_400
        let (civilYear, civilMonth, civilDay) = CivilCalendar.civil(fromDays: Int64(days))
        let (year, month, day) = (Int(civilYear), Int(civilMonth), Int(civilDay))
        appendDigits(year, count: 4, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(month, count: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(day, count: 2, to: &out)
        out.append(UInt8(ascii: "T"))
        appendDigits(secondOfDay / 3600, count: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay / 60 % 60, count: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 60, count: 2, to: &out)
        out.append(UInt8(ascii: "."))
        appendDigits(time.nanoseconds / 1_000_000, count: 3, to: &out)
        out.append(UInt8(ascii: "Z"))
    }

    private static func appendDigits(_ value: Int, count: Int, to out: inout [UInt8]) {
        var digits = [UInt8](repeating: UInt8(ascii: "0"), count: count)
        var rest = value
        for index in stride(from: count - 1, through: 0, by: -1) {
            digits[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        out.append(contentsOf: digits)
    }

    static func appendValue(_ value: Logger.Metadata.Value, to out: inout [UInt8]) {
        switch value {
        case .string(let text):
            appendString(text, to: &out)
        case .stringConvertible(let convertible):
            appendString(convertible.description, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendValue(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let entries):
            out.append(UInt8(ascii: "{"))
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                appendValue(entries[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// `text` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\r`, `\t` or `\u00XX`
    /// (so no line break ever), everything else as its UTF-8 bytes.
    static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                out.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)],
                    hex[Int(byte & 0xF)],
                ])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
