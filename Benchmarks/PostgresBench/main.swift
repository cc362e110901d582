import Foundation
import Postgres

// Query round-trip cost through the Postgres module, side by side with pgbench (libpq in C, the
// same extended protocol) against one private cluster started for the run. Prints a Markdown table.
// Usage: PostgresBench [seconds-per-case]

let seconds = Double(CommandLine.arguments.dropFirst().first ?? "") ?? 5
let folder = "/tmp/shopledger-bench-\(ProcessInfo.processInfo.processIdentifier)"
let port = 54_400 + Int(ProcessInfo.processInfo.processIdentifier % 500)
let cluster = try LocalPostgres(options: .init(dataDirectory: folder + "/data", port: port, durable: true))
let running = try await cluster.start()
let url = running.url(database: "postgres")

struct Row {
    let name: String
    let clients: Int
    let perSecond: Double
    var microsPerCall: Double { Double(clients) * 1_000_000 / perSecond }
}
var rows: [Row] = []

func ours(clients: Int) async throws -> Double {
    let client = PostgresClient(configuration: .init(connection: .init(url: url), minimumConnections: clients, maximumConnections: clients))
    // Warm up every connection.
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<clients { group.addTask { for _ in 0..<200 { try await client.query("SELECT 1") } } }
        try await group.waitForAll()
    }
    let deadline = ContinuousClock.now + .seconds(seconds)
    let started = ContinuousClock.now
    let total = try await withThrowingTaskGroup(of: Int.self) { group in
        for _ in 0..<clients {
            group.addTask {
                var count = 0
                while ContinuousClock.now < deadline {
                    _ = try await client.query("SELECT \(count)::int8")
                    count += 1
                }
                return count
            }
        }
        return try await group.reduce(0, +)
    }
    let elapsed = ContinuousClock.now - started
    await client.shutdown()
    return Double(total) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

func pgbench(clients: Int) throws -> Double? {
    let candidates = ["/usr/lib/postgresql/15/bin/pgbench", "/usr/bin/pgbench"]
    guard let executable = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
    let script = folder + "/select.sql"
    try "SELECT 1::int8;\n".write(toFile: script, atomically: true, encoding: .utf8)
    let output = folder + "/pgbench.out"
    let command = "\(executable) -n -M extended -f \(script) -c \(clients) -j \(min(clients, 2)) -T \(Int(seconds)) -h \(running.socketDirectory) -p \(port) -U \(running.superuser) postgres > \(output) 2>&1"
    guard system(command) == 0, let text = try? String(contentsOfFile: output, encoding: .utf8) else { return nil }
    // "tps = 12345.678901 (without initial connection time)"
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
        let value = Double(line.dropFirst(6).prefix { $0 != " " })
    else { return nil }
    return value
}

do {
    for clients in [1, 8] {
        rows.append(Row(name: "Postgres module (PQexecParams on the pool's threads)", clients: clients, perSecond: try await ours(clients: clients)))
        if let tps = try pgbench(clients: clients) {
            rows.append(Row(name: "pgbench -M extended (libpq, C)", clients: clients, perSecond: tps))
        }
    }
} catch {
    print("benchmark failed: \(error)")
}
try? await cluster.stop()
try? FileManager.default.removeItem(atPath: folder)

print("| client | connections | queries/s | µs per query per connection |")
print("|---|---|---|---|")
for row in rows {
    print("| \(row.name) | \(row.clients) | \(Int(row.perSecond)) | \(String(format: "%.1f", row.microsPerCall)) |")
}
