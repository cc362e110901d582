import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// One purchase sent by the load, with what came back and when.
struct PurchaseAttempt: Sendable {
    let request: PurchaseRequest
    let started: ContinuousClock.Instant
    let finished: ContinuousClock.Instant
    let outcome: FaultHTTP.Outcome

    var latency: Duration { finished - started }
    var acknowledged: Bool { outcome.status == PurchaseRequest.acknowledged }
}

/// Set once, read by every worker.
final class StopSignal: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func set() { flag.store(true, ordering: .releasing) }
}

/// What the load has seen so far, shared by its workers (and read by the scenario while it runs).
final class LoadRecord: Sendable {
    private let attempts = Mutex<[PurchaseAttempt]>([])

    func append(_ attempt: PurchaseAttempt) { attempts.withLock { $0.append(attempt) } }
    var all: [PurchaseAttempt] { attempts.withLock { $0 } }
    var acknowledgedCount: Int { attempts.withLock { $0.count(where: \.acknowledged) } }

    /// Waits until `count` purchases are acknowledged, or a minute has passed since `start` (the
    /// scenario's checks then say what the load did not reach).
    func waitUntilAcknowledged(_ count: Int, since start: ContinuousClock.Instant) async throws {
        while acknowledgedCount < count, ContinuousClock.now - start < .seconds(60) {
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// `workers` concurrent clients, each a registered user of its own, posting new purchases (unique
/// transaction ids, every way in turn) until told to stop. A client whose request failed waits a little
/// before the next one, as a real client backs off.
struct PurchaseLoad: Sendable {
    let scenario: String
    let workers: Int
    let baseURL: String
    var backoffAfterFailure: Duration = .milliseconds(20)
    var requestTimeout: TimeAmount = .seconds(30)
    /// Added to the worker's number in signed transactions' ids, which carry no scenario name: two loads
    /// on one database need different offsets.
    var signedIdOffset = 0

    func uid(_ worker: Int) -> String { "\(scenario)-user-\(worker)" }

    /// Registers every worker's user (`POST /api/v1/me`).
    func registerUsers(_ http: FaultHTTP) async throws {
        for worker in 0..<workers {
            let answer = try await http.send(
                .POST, baseURL + "/api/v1/me", headers: [("Authorization", "Bearer dev:\(uid(worker))")])
            guard answer.status == 201 || answer.status == 200 else {
                throw FaultTestError("registering \(uid(worker)): \(answer.status) \(answer.body)")
            }
        }
    }

    /// Runs the workers until `stop` is set; every attempt lands in `record`.
    func run(_ http: FaultHTTP, until stop: StopSignal, record: LoadRecord) async {
        await withDiscardingTaskGroup { group in
            for worker in 0..<workers {
                group.addTask {
                    var sequence = 0
                    while !stop.isSet, !Task.isCancelled {
                        sequence += 1
                        let way = PurchaseRequest.Way.allCases[(worker + sequence) % PurchaseRequest.Way.allCases.count]
                        // Signed transactions carry numeric ids, like Apple's; stub ids say where they come from.
                        let transaction =
                            way == .jsonSigned
                            ? "9\(String(format: "%03d", worker + signedIdOffset))\(String(format: "%07d", sequence))"
                            : "\(scenario)-w\(worker)-\(sequence)"
                        let request = PurchaseRequest(
                            way: way, uid: uid(worker), transactionId: transaction,
                            product: FaultFixtures.products[(worker * 7 + sequence) % FaultFixtures.products.count])
                        let started = ContinuousClock.now
                        let outcome = await request.send(http, baseURL: baseURL, timeout: requestTimeout)
                        let attempt = PurchaseAttempt(
                            request: request, started: started, finished: .now, outcome: outcome)
                        record.append(attempt)
                        if !attempt.acknowledged { try? await Task.sleep(for: backoffAfterFailure) }
                    }
                }
            }
        }
    }
}

extension PurchaseAttempt {
    /// Clients retrying what failed, one after the other, against `baseURL`.
    static func retry(_ attempts: [PurchaseAttempt], _ http: FaultHTTP, baseURL: String) async -> [PurchaseAttempt] {
        var retries: [PurchaseAttempt] = []
        for attempt in attempts where !attempt.acknowledged {
            let started = ContinuousClock.now
            let outcome = await attempt.request.send(http, baseURL: baseURL)
            retries.append(
                PurchaseAttempt(request: attempt.request, started: started, finished: .now, outcome: outcome))
        }
        return retries
    }
}

/// Latency figures for a report line.
struct LatencySummary: CustomStringConvertible {
    let count: Int
    let median: Duration
    let p99: Duration
    let max: Duration

    init(_ latencies: [Duration]) {
        let sorted = latencies.sorted()
        count = sorted.count
        median = sorted.isEmpty ? .zero : sorted[sorted.count / 2]
        p99 = sorted.isEmpty ? .zero : sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
        max = sorted.last ?? .zero
    }

    var description: String { "n=\(count) p50=\(ms(median)) p99=\(ms(p99)) max=\(ms(max))" }
}

func ms(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    return String(format: "%.0f ms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
}
