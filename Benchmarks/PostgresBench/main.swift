import BenchSupport
import Foundation
import Postgres

// Query round-trip cost through the Postgres module, side by side with pgbench (libpq in C, the
// same extended protocol) against one private cluster started for the run. The statement has one
// parameter, so our module sends it unnamed (cache off: parsed and planned per call, like pgbench
// -M extended) or by name (cache on: like pgbench -M prepared). Prints a Markdown table, with the
// client-side CPU per query (ours or pgbench's), which a busy shared machine disturbs far less than
// throughput.
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
    /// Client-side CPU (user + system) per query: our process, or pgbench's. Unlike throughput,
    /// it hardly moves when other work shares the machine.
    var cpuMicros: [Double] = []
    var mean: Double { perSecond.reduce(0, +) / Double(max(perSecond.count, 1)) }
    var meanCPU: Double { cpuMicros.reduce(0, +) / Double(max(cpuMicros.count, 1)) }
    var microsPerCall: Double { Double(clients) * 1_000_000 / mean }
}
struct Sample {
    let perSecond: Double
    let cpuMicrosPerQuery: Double
}
var rows: [Row] = []
@MainActor func record(_ name: String, _ clients: Int, _ sample: Sample?) {
    guard let sample else { return }
    if let index = rows.firstIndex(where: { $0.name == name && $0.clients == clients }) {
        rows[index].perSecond.append(sample.perSecond)
        rows[index].cpuMicros.append(sample.cpuMicrosPerQuery)
    } else {
        rows.append(
            Row(name: name, clients: clients, perSecond: [sample.perSecond], cpuMicros: [sample.cpuMicrosPerQuery]))
    }
}

/// CPU seconds (user + system) used so far by this process, or by its waited-for children.
func cpuSeconds(_ who: Int32) -> Double {
    var usage = rusage()
    getrusage(who, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

func ours(clients: Int, cacheSize: Int) async throws -> Sample {
    let client = PostgresClient(
        configuration: .init(
            connection: .init(url: url, preparedStatementCacheSize: cacheSize), minimumConnections: clients,
            maximumConnections: clients))
    // Warm up every connection.
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<clients { group.addTask { for n in 0..<200 { try await client.query("SELECT \(n)::int8") } } }
        try await group.waitForAll()
    }
    let deadline = ContinuousClock.now + .seconds(seconds)
    let started = ContinuousClock.now
    let cpuBefore = cpuSeconds(RUSAGE_SELF.rawValue)
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
    let cpu = cpuSeconds(RUSAGE_SELF.rawValue) - cpuBefore
    await client.shutdown()
    let perSecond = Double(total) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    return Sample(perSecond: perSecond, cpuMicrosPerQuery: cpu * 1e6 / Double(total))
}

func pgbench(clients: Int, mode: String) async throws -> Sample? {
    guard
        let pgbench = Pgbench(
            socketDirectory: running.socketDirectory, port: port, user: running.superuser, database: "postgres",
            folder: folder)
    else { return nil }
    let cpuBefore = cpuSeconds(RUSAGE_CHILDREN.rawValue)
    let result = try await pgbench.run(
        scripts: ["\\set n random(1, 1000000)\nSELECT :n::int8;\n"], defines: [:], clients: clients,
        seconds: Int(seconds), mode: mode, logLatencies: false)
    guard result.transactions > 0 else { return nil }
    return Sample(
        perSecond: result.perSecond,
        cpuMicrosPerQuery: (cpuSeconds(RUSAGE_CHILDREN.rawValue) - cpuBefore) * 1e6 / Double(result.transactions))
}

do {
    for _ in 0..<rounds {
        for clients in [1, 8] {
            record(
                "Postgres module, cache off (PQexecParams, unnamed)", clients,
                try await ours(clients: clients, cacheSize: 0))
            record(
                "Postgres module, cache on (PQexecPrepared)", clients, try await ours(clients: clients, cacheSize: 128))
            record(
                "pgbench -M extended (libpq, C, unnamed)", clients,
                try await pgbench(clients: clients, mode: "extended"))
            record("pgbench -M prepared (libpq, C)", clients, try await pgbench(clients: clients, mode: "prepared"))
        }
    }
} catch {
    print("benchmark failed: \(error)")
}
try? await cluster.stop()
try? FileManager.default.removeItem(atPath: folder)

print("| client | connections | queries/s | µs per query per connection | client CPU µs per query |")
print("|---|---|---|---|---|")
for row in rows.sorted(by: { ($0.clients, $0.name) < ($1.clients, $1.name) }) {
    print(
        "| \(row.name) | \(row.clients) | \(Int(row.mean)) | \(String(format: "%.1f", row.microsPerCall)) | \(String(format: "%.1f", row.meanCPU)) |"
    )
}
