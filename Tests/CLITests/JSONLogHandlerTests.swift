import Foundation
import Logging
import Synchronization
import Testing

@testable import shopledger

/// `--log-format json`'s handler: one parseable object per line, whatever the message and metadata hold.
@Suite("JSONLogHandler: one JSON object per line")
struct JSONLogHandlerTests {
    final class Lines: Sendable {
        let lines = Mutex<[[UInt8]]>([])
        var all: [[UInt8]] { lines.withLock { $0 } }
    }

    static func logged(
        _ message: Logger.Message, metadata: Logger.Metadata = [:], handlerMetadata: Logger.Metadata = [:]
    ) throws -> (text: String, object: [String: Any]) {
        let lines = Lines()
        var handler = JSONLogHandler(label: "shopledger.test", metadataProvider: nil) { bytes in
            lines.lines.withLock { $0.append(bytes) }
        }
        handler.metadata = handlerMetadata
        var logger = Logger(label: "shopledger.test") { _ in handler }
        logger.logLevel = .trace
        logger.info(message, metadata: metadata)
        let line = try #require(lines.all.first)
        #expect(lines.all.count == 1)
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false, "no line break inside a line")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        return (String(decoding: line, as: UTF8.self), object)
    }

    @Test("the fields: timestamp in ISO 8601 UTC with milliseconds, level, message, label")
    func fields() throws {
        let (_, object) = try Self.logged("hello")
        let timestamp = try #require(object["timestamp"] as? String)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try #require(formatter.date(from: timestamp), "\(timestamp)")
        #expect(abs(date.timeIntervalSinceNow) < 60, "\(timestamp) is now")
        #expect(timestamp.count == "2026-11-27T03:45:12.123Z".count)
        #expect(object["level"] as? String == "info")
        #expect(object["message"] as? String == "hello")
        #expect(object["label"] as? String == "shopledger.test")
        #expect(object["request_id"] == nil)
    }

    @Test(
        "timestamps of known instants",
        arguments: [
            (0, 0, "1970-01-01T00:00:00.000Z"), (951_782_400, 5_000_000, "2000-02-29T00:00:00.005Z"),
            (1_795_750_512, 999_999_999, "2026-11-27T03:35:12.999Z"), (-1, 0, "1969-12-31T23:59:59.000Z"),
            (4_107_542_399, 123_000_000, "2100-02-28T23:59:59.123Z"),
        ] as [(Int, Int, String)])
    func timestamps(seconds: Int, nanoseconds: Int, expected: String) {
        var out: [UInt8] = []
        JSONLogHandler.appendTimestamp((seconds, nanoseconds), to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }

    @Test("awkward strings survive: quotes, backslashes, line breaks, control characters, unicode")
    func escaping() throws {
        let awkward = "a \"quoted\" \\ back\\slash\nnew line\r\ttab \u{0}\u{1}\u{1F}\u{7F} é 한글 🛒 \u{2028}"
        let (text, object) = try Self.logged(
            "\(awkward)", metadata: ["path": .string(awkward), "weird \"key\"\n": .string("v")])
        #expect(object["message"] as? String == awkward)
        #expect(object["path"] as? String == awkward)
        #expect(object["weird \"key\"\n"] as? String == "v")
        #expect(text.contains(#"\u0000\u0001\u001f\u007f"#))
        #expect(text.contains("é 한글 🛒"), "other characters are written as UTF-8, not escaped")
    }

    @Test("nested metadata as objects and arrays; other values as strings; handler metadata merged")
    func nested() throws {
        let (_, object) = try Self.logged(
            "nested",
            metadata: [
                "status": .stringConvertible(404),
                "list": .array([.string("a"), .dictionary(["x": .string("1")]), .array([])]),
                "object": .dictionary(["inner": .dictionary(["deep": .string("\"")]), "n": .stringConvertible(1.5)]),
            ], handlerMetadata: ["hb.request.id": .string("req-123"), "component": .string("sync")])
        #expect(object["status"] as? String == "404")
        let list = try #require(object["list"] as? [Any])
        #expect(list.count == 3 && list[0] as? String == "a")
        #expect((list[1] as? [String: Any])?["x"] as? String == "1")
        #expect((list[2] as? [Any])?.isEmpty == true)
        let nested = try #require(object["object"] as? [String: Any])
        #expect(((nested["inner"] as? [String: Any])?["deep"] as? String) == "\"")
        #expect(nested["n"] as? String == "1.5")
        #expect(object["request_id"] as? String == "req-123", "the request id has its own field")
        #expect(object["hb.request.id"] == nil)
        #expect(object["component"] as? String == "sync")
    }

    @Test("a metadata key named like a field does not replace it")
    func reservedKeys() throws {
        let (text, object) = try Self.logged(
            "the message", metadata: ["message": .string("other"), "level": .string("fake")])
        #expect(object["message"] as? String == "the message")
        #expect(object["level"] as? String == "info")
        #expect(object["_message"] as? String == "other" && object["_level"] as? String == "fake")
        #expect(text.components(separatedBy: #""message":"#).count == 2, "one message key: \(text)")
    }

    /// The code logs failures as `error` metadata; docs/configuration.md says the line has `error`.
    @Test("error metadata keeps its name; it yields only to an error logged with the event")
    func errorKey() throws {
        let (_, object) = try Self.logged("pruning failed", metadata: ["error": .string("timeout")])
        #expect(object["error"] as? String == "timeout")
        #expect(object["_error"] == nil)

        struct Failure: Error, CustomStringConvertible { var description: String { "the event's error" } }
        let handler = JSONLogHandler(label: "shopledger.test", metadataProvider: nil) { _ in }
        let event = LogEvent(
            level: .error, message: "failed", error: Failure(), metadata: ["error": .string("metadata's")],
            source: nil, file: #fileID, function: #function, line: #line)
        let line = handler.line(event: event, at: (0, 0))
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        #expect(fields["error"] as? String == "the event's error")
        #expect(fields["_error"] as? String == "metadata's")
    }
}
