import Foundation
import NIOCore

/// The threads proofs are verified on: at most `maximumThreads` at once (the machine's cores by
/// default), none of them Swift's cooperative threads, which serve every request.
///
/// A classic receipt costs a few RSA checks and a chain; a forged one was made to cost minutes. Run on
/// the cooperative threads (two on a 2-core machine), two such proofs froze `/healthz`. Here they queue
/// for these threads instead, in order, and the rest of the server keeps its own. A job whose task was
/// cancelled while it waited (its request's deadline passed) stops at its first step (``BoundedProver``).
///
/// Threads start when work arrives and end after `idleTimeout` without any, so an idle server (or a test
/// that builds many applications) holds none.
final class VerificationExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: every stored var is read and written only while `condition` is locked.
    let maximumThreads: Int
    private let idleTimeout: TimeInterval
    private let condition = NSCondition()
    private var jobs = CircularBuffer<UnownedJob>()
    private var threads = 0
    private var waiting = 0

    init(maximumThreads: Int = ProcessInfo.processInfo.activeProcessorCount, idleTimeout: TimeInterval = 5) {
        self.maximumThreads = max(1, maximumThreads)
        self.idleTimeout = idleTimeout
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        let startThread = threads < maximumThreads && jobs.count > waiting
        if startThread { threads += 1 }
        condition.signal()
        condition.unlock()
        if startThread {
            let thread = Thread { [self] in work() }
            thread.name = "shopledger-verify"
            thread.start()
        }
    }

    /// How many threads exist now (for tests).
    var threadCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return threads
    }

    private func work() {
        condition.lock()
        while true {
            if let job = jobs.popFirst() {
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
                condition.lock()
                continue
            }
            waiting += 1
            let signalled = condition.wait(until: Date(timeIntervalSinceNow: idleTimeout))
            waiting -= 1
            if !signalled, jobs.isEmpty {
                threads -= 1
                condition.unlock()
                return
            }
        }
    }
}
