import Foundation
import NIOCore

/// The threads proofs are verified on: at most `maximumThreads` at once (the machine's cores by
/// default), none of them Swift's cooperative threads, which serve every request.
///
/// A classic receipt costs a few RSA checks and a chain; a forged one was made to cost minutes. Run on
/// the cooperative threads (two on a 2-core machine), two such proofs froze `/healthz`. Here they queue
/// for these threads instead, and the rest of the server keeps its own. A job whose task was cancelled
/// while it waited (its request's deadline passed) stops at its first step (``BoundedProver``).
///
/// Work comes in two classes, each through a ``Lane`` (a task executor of its own): a user's purchase or
/// restore proofs (signed in: each user's are limited) and App Store notifications (anyone may send one:
/// a valid signature over a foreign chain costs a verification). Queued purchases always go first, and
/// notifications run on at most ``notificationThreads`` threads at once (half, at least one), so a
/// flood of notifications leaves a buyer the other threads and waits behind them: it had queued first
/// in, first out beside purchases and took a buyer's latency from 6 ms to 1.4 s at 1,500 connections.
///
/// Threads start when work arrives and end after `idleTimeout` without any, so an idle server (or a test
/// that builds many applications) holds none.
final class VerificationExecutor: @unchecked Sendable {
    // @unchecked Sendable: every stored var is read and written only while `condition` is locked.

    /// A class of verification work.
    enum WorkClass: Sendable {
        /// Proofs of signed-in users (purchases, restores, and Apple's answers to their requests).
        case purchases
        /// App Store notifications (no user; the signature is the proof).
        case notifications
    }

    /// The executor a class of work runs on: a ``BoundedProver`` prefers one per class.
    final class Lane: TaskExecutor {
        let executor: VerificationExecutor
        let workClass: WorkClass

        fileprivate init(executor: VerificationExecutor, workClass: WorkClass) {
            self.executor = executor
            self.workClass = workClass
        }

        func enqueue(_ job: consuming ExecutorJob) {
            executor.enqueue(UnownedJob(job), workClass, on: self)
        }
    }

    let maximumThreads: Int
    /// The most notification jobs that run at once.
    let notificationThreads: Int
    private let idleTimeout: TimeInterval
    private let condition = NSCondition()
    private var purchaseJobs = CircularBuffer<(UnownedJob, Lane)>()
    private var notificationJobs = CircularBuffer<(UnownedJob, Lane)>()
    private var runningNotifications = 0
    private var threads = 0
    private var waiting = 0

    init(maximumThreads: Int = ProcessInfo.processInfo.activeProcessorCount, idleTimeout: TimeInterval = 5) {
        self.maximumThreads = max(1, maximumThreads)
        self.notificationThreads = max(1, self.maximumThreads / 2)
        self.idleTimeout = idleTimeout
    }

    /// The lane for `workClass`.
    func lane(_ workClass: WorkClass) -> Lane { Lane(executor: self, workClass: workClass) }

    private func enqueue(_ job: UnownedJob, _ workClass: WorkClass, on lane: Lane) {
        condition.lock()
        switch workClass {
        case .purchases: purchaseJobs.append((job, lane))
        case .notifications: notificationJobs.append((job, lane))
        }
        let startThread = threads < maximumThreads && runnableJobs > waiting
        if startThread { threads += 1 }
        condition.signal()
        condition.unlock()
        if startThread {
            let thread = Thread { [self] in work() }
            thread.name = "shopledger-verify"
            thread.start()
        }
    }

    /// How many jobs wait for a thread now (for tests).
    var queuedJobs: Int {
        condition.lock()
        defer { condition.unlock() }
        return purchaseJobs.count + notificationJobs.count
    }

    /// How many threads exist now (for tests).
    var threadCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return threads
    }

    /// Jobs a free thread could take now (`condition` locked).
    private var runnableJobs: Int {
        purchaseJobs.count + min(notificationJobs.count, max(0, notificationThreads - runningNotifications))
    }

    /// The next job a free thread takes: a purchase first, then a notification within its share
    /// (`condition` locked).
    private func nextJob() -> (UnownedJob, Lane)? {
        if let job = purchaseJobs.popFirst() { return job }
        guard runningNotifications < notificationThreads, let job = notificationJobs.popFirst() else { return nil }
        runningNotifications += 1
        return job
    }

    private func work() {
        condition.lock()
        while true {
            if let (job, lane) = nextJob() {
                condition.unlock()
                job.runSynchronously(on: lane.asUnownedTaskExecutor())
                condition.lock()
                if lane.workClass == .notifications {
                    runningNotifications -= 1
                    // A notification's place is free: a thread waiting with notifications queued may take one.
                    if !notificationJobs.isEmpty { condition.signal() }
                }
                continue
            }
            waiting += 1
            let signalled = condition.wait(until: Date(timeIntervalSinceNow: idleTimeout))
            waiting -= 1
            if !signalled, runnableJobs == 0 {
                threads -= 1
                condition.unlock()
                return
            }
        }
    }
}
