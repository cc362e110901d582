import BenchSupport
import Foundation
import Synchronization

/// One measured case: calls per second and latency percentiles.
struct Measurement {
    let label: String
    let clients: Int
    let calls: Int
    let perSecond: Double
    /// Sorted, in milliseconds.
    let latencies: [Double]
    var usage: ServerLoad.Usage?

    func percentile(_ fraction: Double) -> Double {
        BenchSupport.percentile(latencies, fraction) ?? 0
    }

    var line: String {
        var text =
            "\(label): clients \(clients), calls \(calls), \(Int(perSecond.rounded()))/s, "
            + String(format: "p50 %.2f ms, p99 %.2f ms", percentile(0.5), percentile(0.99))
        if let usage, calls > 0 {
            text += String(format: "; CPU per call: server %.0f µs, client %.0f µs", serverMicros, clientMicros)
            text += String(format: " (2-core estimate %.0f/s)", twoCoreEstimate)
            text += ", \(usage)"
            if usage.walSyncs > 0 {
                text += String(
                    format: ", %.1f commits per WAL flush of %.2f ms", Double(calls) / usage.walSyncs,
                    usage.millisPerFlush)
            }
        }
        return text
    }

    /// CPU time per call of the PostgreSQL server and of the client (our process, or pgbench).
    var serverMicros: Double { (usage?.server ?? 0) * 1e6 / Double(max(calls, 1)) }
    var clientMicros: Double { (usage?.client ?? 0) * 1e6 / Double(max(calls, 1)) }
    /// Calls per second two dedicated cores could run if CPU were the only limit.
    var twoCoreEstimate: Double { 2e6 / max(serverMicros + clientMicros, 1) }

    /// Runs `call` from `clients` concurrent tasks until `seconds` pass (or `callsEach` calls each).
    static func drive(
        _ label: String, clients: Int, seconds: Double? = nil, callsEach: Int = .max,
        _ call: @escaping @Sendable (_ client: Int, _ index: Int) async throws -> Void
    ) async throws -> Measurement {
        let started = ContinuousClock.now
        let deadline = seconds.map { started + .seconds($0) }
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for client in 0..<clients {
                group.addTask {
                    var latencies: [Double] = []
                    latencies.reserveCapacity(min(callsEach, 100_000))
                    var index = 0
                    while index < callsEach, deadline.map({ ContinuousClock.now < $0 }) ?? true {
                        let began = ContinuousClock.now
                        try await call(client, index)
                        latencies.append((ContinuousClock.now - began).milliseconds)
                        index += 1
                    }
                    return latencies
                }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all
        }
        let elapsed = (ContinuousClock.now - started).milliseconds / 1000
        return Measurement(
            label: label, clients: clients, calls: latencies.count, perSecond: Double(latencies.count) / elapsed,
            latencies: latencies.sorted())
    }
}

extension Duration {
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}

final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int {
        value.withLock {
            $0 += 1; return $0
        }
    }
}
