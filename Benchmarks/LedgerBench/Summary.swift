import Foundation

/// The closing Markdown tables: means over the rounds.
enum Summary {
    static let ceilingColumns = [
        "recordPurchase, unnamed", "recordPurchase, prepared", "module, raw statement", "pgbench -M prepared",
    ]

    static func print(_ results: [String: [Int: [Measurement]]], seconds: Double, rounds: Int) {
        func mean(_ label: String, _ clients: Int, _ value: (Measurement) -> Double) -> Double? {
            guard let runs = results[label]?[clients], !runs.isEmpty else { return nil }
            return runs.map(value).reduce(0, +) / Double(runs.count)
        }
        func rate(_ label: String, _ clients: Int) -> Double? { mean(label, clients) { $0.perSecond } }
        Swift.print(
            "\n## New purchases per second (mean of \(rounds) rounds × \(Int(seconds)) s; durable cluster, synchronous_commit=on)\n"
        )
        Swift.print(
            "| clients | " + ceilingColumns.joined(separator: " | ")
                + " | prepared ÷ unnamed | prepared ÷ pgbench | raw ÷ pgbench |")
        Swift.print("|---|" + String(repeating: "---|", count: ceilingColumns.count + 3))
        for clients in [1, 8, 16] {
            var cells = ceilingColumns.map { rate($0, clients).map { String(Int($0.rounded())) } ?? "–" }
            func ratio(_ a: String, _ b: String) -> String {
                guard let x = rate(a, clients), let y = rate(b, clients), y > 0 else { return "–" }
                return String(format: "%.2f", x / y)
            }
            cells.append(ratio(ceilingColumns[1], ceilingColumns[0]))
            cells.append(ratio(ceilingColumns[1], ceilingColumns[3]))
            cells.append(ratio(ceilingColumns[2], ceilingColumns[3]))
            Swift.print("| \(clients) | " + cells.joined(separator: " | ") + " |")
        }
        Swift.print(
            "\n## CPU per new purchase, µs: server + client (ours, or pgbench); the rate two dedicated cores could sustain if CPU were the only limit\n"
        )
        Swift.print("| clients | " + ceilingColumns.joined(separator: " | ") + " |")
        Swift.print("|---|" + String(repeating: "---|", count: ceilingColumns.count))
        for clients in [1, 8, 16] {
            let cells = ceilingColumns.map { label -> String in
                guard let server = mean(label, clients, { $0.serverMicros }),
                    let client = mean(label, clients, { $0.clientMicros }),
                    let estimate = mean(label, clients, { $0.twoCoreEstimate })
                else { return "–" }
                return String(format: "%.0f + %.0f → %.0f/s", server, client, estimate)
            }
            Swift.print("| \(clients) | " + cells.joined(separator: " | ") + " |")
        }
        Swift.print("\n## Latency p50 / p99, ms, and machine CPU busy (all cores, other users included)\n")
        Swift.print("| clients | " + ceilingColumns.joined(separator: " | ") + " |")
        Swift.print("|---|" + String(repeating: "---|", count: ceilingColumns.count))
        for clients in [1, 8, 16] {
            let cells = ceilingColumns.map { label -> String in
                guard let p50 = mean(label, clients, { $0.percentile(0.5) }),
                    let p99 = mean(label, clients, { $0.percentile(0.99) })
                else { return "–" }
                let busy = mean(label, clients) { $0.usage?.busy ?? 0 } ?? 0
                return String(format: "%.2f / %.2f (%.0f%%)", p50, p99, busy * 100)
            }
            Swift.print("| \(clients) | " + cells.joined(separator: " | ") + " |")
        }
        Swift.print("\n## Other cases\n")
        Swift.print(
            "| case | clients | calls/s | p50 ms | p99 ms | CPU µs per call, server + client | commits per WAL flush (ms per flush) |"
        )
        Swift.print("|---|---|---|---|---|---|---|")
        for (label, byClients) in results.sorted(by: { $0.key < $1.key }) where !ceilingColumns.contains(label) {
            for (clients, runs) in byClients.sorted(by: { $0.key < $1.key }) {
                let count = Double(runs.count)
                let perSecond = runs.map(\.perSecond).reduce(0, +) / count
                let p50 = runs.map { $0.percentile(0.5) }.reduce(0, +) / count
                let p99 = runs.map { $0.percentile(0.99) }.reduce(0, +) / count
                let measured = runs.filter { $0.usage != nil }
                let busy =
                    measured.isEmpty
                    ? "–"
                    : String(
                        format: "%.0f + %.0f",
                        measured.map(\.serverMicros).reduce(0, +) / Double(measured.count),
                        measured.map(\.clientMicros).reduce(0, +) / Double(measured.count))
                let syncs = runs.compactMap(\.usage).map(\.walSyncs).reduce(0, +)
                let calls = Double(runs.map(\.calls).reduce(0, +))
                let flushMillis =
                    measured.compactMap(\.usage).map(\.millisPerFlush).reduce(0, +) / Double(max(measured.count, 1))
                let perFlush = syncs > 0 ? String(format: "%.1f (%.2f)", calls / syncs, flushMillis) : "–"
                Swift.print(
                    "| \(label) | \(clients) | " + String(format: "%.0f | %.2f | %.2f", perSecond, p50, p99)
                        + " | \(busy) | \(perFlush) |")
            }
        }
    }
}
