import Foundation
import Postgres

// Query round-trip cost through the Postgres module, side by side with pgbench (libpq in C, the
// same extended protocol) against one private cluster started for the run. The statement has one
// parameter, so our module sends it unnamed (cache off: parsed and planned per call, like pgbench
// -M extended) or by name (cache on: like pgbench -M prepared). Prints a Markdown table.
// Usage: PostgresBench [seconds-per-case] [rounds]

let seconds = Double(CommandLine.arguments.dropFirst().first ?? "") ?? 5
let rounds = Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 1
let folder = "/tmp/shopledger-bench-\(ProcessInfo.processInfo.processIdentifier)"
let port = 54_400 + Int(ProcessInfo.processInfo.processIdentifier % 500)
let cluster = try LocalPostgres(options: .init(dataDirectory: folder + "/data", port: port, durable: true))
let running = try await cluster.start()
let url = running.url(database: "postgres")

struct Row {
    let name: String
    let clients: Int
    var perSecond: [Double] = []
    var mean: Double { perSecond.reduce(0, +) / Double(max(perSecond.count, 1)) }
    var microsPerCall: Double { Double(clients) * 1_000_000 / mean }
}
var rows: [Row] = []
@MainActor func record(_ name: String, _ clients: Int, _ perSecond: Double?) {
    guard let perSecond else { return }
    if let index = rows.firstIndex(where: { $0.name == name && $0.clients == clients }) {
        rows[index].perSecond.append(perSecond)
    } else {
        rows.append(Row(name: name, clients: clients, perSecond: [perSecond]))
    }
}

func ours(clients: Int, cacheSize: Int) async throws -> Double {
    let client = PostgresClient(configuration: .init(
        connection: .init(url: url, preparedStatementCacheSize: cacheSize), minimumConnections: clients, maximumConnections: clients))
    // Warm up every connection.
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<clients { group.addTask { for n in 0..<200 { try await client.query("SELECT \(n)::int8") } } }
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

func pgbench(clients: Int, mode: String) throws -> Double? {
    let candidates = ["/usr/lib/postgresql/15/bin/pgbench", "/usr/bin/pgbench"]
    guard let executable = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
    let script = folder + "/select.sql"
    try "\\set n random(1, 1000000)\nSELECT :n::int8;\n".write(toFile: script, atomically: true, encoding: .utf8)
    let output = folder + "/pgbench.out"
    let command = "\(executable) -n -M \(mode) -f \(script) -c \(clients) -j \(clients) -T \(Int(seconds)) -h \(running.socketDirectory) -p \(port) -U \(running.superuser) postgres > \(output) 2>&1"
    guard system(command) == 0, let text = try? String(contentsOfFile: output, encoding: .utf8) else { return nil }
    // "tps = 12345.678901 (without initial connection time)"
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
        let value = Double(line.dropFirst(6).prefix { $0 != " " })
    else { return nil }
    return value
}

do {
    for _ in 0..<rounds {
        for clients in [1, 8] {
            record("Postgres module, cache off (PQexecParams, unnamed)", clients, try await ours(clients: clients, cacheSize: 0))
            record("Postgres module, cache on (PQexecPrepared)", clients, try await ours(clients: clients, cacheSize: 128))
            record("pgbench -M extended (libpq, C, unnamed)", clients, try pgbench(clients: clients, mode: "extended"))
            record("pgbench -M prepared (libpq, C)", clients, try pgbench(clients: clients, mode: "prepared"))
        }
    }
} catch {
    print("benchmark failed: \(error)")
}
try? await cluster.stop()
try? FileManager.default.removeItem(atPath: folder)

print("| client | connections | queries/s | µs per query per connection |")
print("|---|---|---|---|")
for row in rows.sorted(by: { ($0.clients, $0.name) < ($1.clients, $1.name) }) {
    print("| \(row.name) | \(row.clients) | \(Int(row.mean)) | \(String(format: "%.1f", row.microsPerCall)) |")
}
