import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// `serve --log-format json`: every line the real binary writes is one JSON object with the fields log
/// collectors key on, and each request's line carries the id its answer's `x-request-id` gave the client.
@Suite("--log-format json, with the real binary")
struct JSONLogFormatTests {
    @Test(
        "every log line of serve --log-format json parses, with timestamp, level, message, label and the request id",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(3)))
    func serveLogsJSONLines() async throws {
        try await FaultScenario.run("json-log") { scenario in
            let server = try await scenario.startServer(
                options: ["--log-format", "json"], environment: ["SHOPLEDGER_LOG_LEVEL": "info"])
            // A success, a refusal, an unknown route, and a path with characters JSON must escape.
            let requests: [(HTTPMethod, String, [(String, String)])] = [
                (.GET, "/healthz", []),
                (.POST, "/api/v1/me", [("Authorization", "Bearer dev:json-log-user")]),
                (.GET, "/api/v1/me", [("Authorization", "Bearer nonsense")]),
                (.GET, "/no/such/route", []),
                (.GET, "/quote%22back%5Cslash%0Aline", []),
            ]
            var ids: [String: String] = [:]
            for (method, path, headers) in requests {
                var request = HTTPClientRequest(url: server.baseURL + path)
                request.method = method
                for (name, value) in headers { request.headers.add(name: name, value: value) }
                let response = try await scenario.http.client.execute(request, timeout: .seconds(10))
                _ = try await response.body.collect(upTo: 1 << 20)
                let id = try #require(response.headers.first(name: "x-request-id"), "\(path): no x-request-id")
                ids[id] = path
            }
            server.child.signal(SIGTERM)
            let exit = await server.child.waitForExit(timeout: .seconds(20))
            #expect(exit == .exited(0), "serve ended \(exit.map(\.description) ?? "not at all")")

            let log = try String(contentsOfFile: server.child.logPath, encoding: .utf8)
            let lines = log.split(separator: "\n", omittingEmptySubsequences: true)
            let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            // The start line says which build serves; the stop lines say why it stopped.
            let serving = try #require(
                objects.first { ($0["message"] as? String)?.hasPrefix("shopledger serving on") == true }, "\(log)")
            let (_, version) = try await Spawned.run([try ServerProcess.binary(), "--version"])
            let build =
                "shopledger \(serving["version"] as? String ?? "?") (commit \(serving["commit"] as? String ?? "?"))"
            #expect(version.trimmingCharacters(in: .whitespacesAndNewlines) == build, "\(serving)")
            let stopping = try #require(
                objects.first { $0["message"] as? String == "shopledger shutting down" }, "\(log)")
            #expect(stopping["signal"] as? String == "SIGTERM" && stopping["grace_s"] is String, "\(stopping)")
            let stopped = try #require(objects.first { $0["message"] as? String == "shopledger stopped" }, "\(log)")
            #expect(stopped["reason"] as? String == "SIGTERM" && stopped["after_s"] is String, "\(stopped)")
            #expect(lines.count >= requests.count, "\(log)")
            let timestamps = ISO8601DateFormatter()
            timestamps.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            var requestLines: [String: [String: Any]] = [:]
            for line in lines {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                let fields = try #require(object, "not a JSON object: \(line)")
                let timestamp = try #require(fields["timestamp"] as? String, "\(line)")
                #expect(timestamp.hasSuffix("Z") && timestamps.date(from: timestamp) != nil, "\(line)")
                #expect(
                    ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(
                        fields["level"] as? String ?? ""), "\(line)")
                #expect(fields["message"] is String && fields["label"] is String, "\(line)")
                if fields["message"] as? String == "request", let id = fields["request_id"] as? String {
                    requestLines[id] = fields
                }
            }
            for (id, path) in ids {
                let fields = try #require(requestLines[id], "no request line with request_id \(id) (\(path)):\n\(log)")
                #expect(fields["method"] is String && fields["status"] is String, "\(fields)")
                #expect(fields["hb.request.id"] == nil, "the id is request_id, not repeated as metadata")
                #expect((fields["path"] as? String)?.hasPrefix(String(path.prefix(6))) == true, "\(fields)")
            }
            scenario.report("\(lines.count) JSON log lines, \(ids.count) requests found by their x-request-id")
        }
    }

    @Test("a bad SHOPLEDGER_LOG_FORMAT or --log-format stops the start with exit 64, naming it")
    func badFormatRefused() async throws {
        let (status, output) = try await Spawned.run(
            [try ServerProcess.binary(), "migrate", "--status", "--database-url", "postgres://127.0.0.1:1/none"],
            environment: Spawned.environment(["SHOPLEDGER_LOG_FORMAT": "xml"]), timeout: .seconds(30))
        #expect(status == .exited(64), "\(status): \(output)")
        #expect(output.contains("SHOPLEDGER_LOG_FORMAT must be one of text, json"), "\(output)")
        let (flagStatus, flagOutput) = try await Spawned.run(
            [
                try ServerProcess.binary(), "migrate", "--status", "--log-format", "xml", "--database-url",
                "postgres://127.0.0.1:1/none",
            ], environment: Spawned.environment([:]), timeout: .seconds(30))
        #expect(flagStatus == .exited(64), "\(flagStatus): \(flagOutput)")
        #expect(flagOutput.contains("--log-format"), "\(flagOutput)")
    }

    @Test("with JSON logging, an error that stops the start is a JSON line too, with its exit status")
    func fatalErrorAsJSON() async throws {
        let (status, output) = try await Spawned.run(
            [try ServerProcess.binary(), "serve", "--data-dir", "/nonexistent/shopledger"],
            environment: Spawned.environment(["SHOPLEDGER_LOG_FORMAT": "json", "SHOPLEDGER_PROT": "9150"]),
            timeout: .seconds(30))
        #expect(status == .exited(64), "\(status): \(output)")
        let lines = output.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count == 1, "\(output)")
        let line = try #require(lines.first)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(output)")
        #expect(object["level"] as? String == "critical", "\(object)")
        #expect(
            object["message"] as? String
                == "SHOPLEDGER_PROT is not a setting of shopledger; did you mean SHOPLEDGER_PORT?", "\(object)")
        #expect(object["exit_status"] as? String == "64", "\(object)")
    }
}
