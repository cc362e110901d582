import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

@testable import ShopServer

/// `/metrics` tells which build is serving and how its process fares, under the names every Prometheus
/// dashboard expects; each value must be plausible, not merely present.
@Suite("Metrics: build info and process metrics")
struct ProcessMetricsTests {
    /// The sample's value for a metric line starting with `prefix` (name, and labels if any).
    static func value(_ prefix: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(prefix + " ") || $0.hasPrefix(prefix + "{") }
            .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
    }

    @Test("/metrics has shopledger_build_info and the process_* metrics with plausible values")
    func buildInfoAndProcess() async throws {
        try await withShopServer { client, _ in
            let text = try await client.send(.get, "/metrics").body
            let labels = #"\{version="[0-9]+\.[0-9]+\.[0-9]+",commit="[A-Za-z0-9._+-]+"\}"#
            let buildInfo = try NSRegularExpression(pattern: "(?m)^shopledger_build_info" + labels + #" 1(\.0)?$"#)
            #expect(buildInfo.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil, "\(text)")
            #expect(Self.value("shopledger_build_info", in: text) == 1)
            #if os(Linux)
            let cpu = try #require(Self.value("process_cpu_seconds_total", in: text), "\(text)")
            #expect(cpu > 0 && cpu < 100_000)
            let resident = try #require(Self.value("process_resident_memory_bytes", in: text))
            #expect(resident > 1_000_000 && resident < 100_000_000_000)
            let open = try #require(Self.value("process_open_fds", in: text))
            let max = try #require(Self.value("process_max_fds", in: text))
            #expect(open >= 3 && open <= max)
            let started = try #require(Self.value("process_start_time_seconds", in: text))
            let now = Date().timeIntervalSince1970
            #expect(started > now - 86_400 && started <= now + 5, "started \(started), now \(now)")
            #endif
        }
    }
}
