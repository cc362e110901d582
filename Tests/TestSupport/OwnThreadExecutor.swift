import Dispatch

/// A task executor with a thread of its own (a serial dispatch queue), outside Swift's cooperative
/// threads.
///
/// The tests run all at once on two cooperative threads, and some of them (corpus replays, receipt
/// checks, key generation) keep a thread for up to a second without suspending. A fake server whose
/// handlers wait behind them answers late: a client's 700 ms timeout fired before the fake of Apple had
/// answered, and a test that counted one request saw two (a CI run, 2026-11-27). A fake and the test
/// that calls it run under this executor's preference (`withTaskExecutorPreference`), so their time is
/// theirs whatever else the process does. (A `Task.sleep` still wakes on a cooperative thread: keep upper
/// time bounds loose, docs/testing.md.)
public final class OwnThreadExecutor: TaskExecutor {
    private let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
