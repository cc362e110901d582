import Dispatch
import Synchronization

/// A task executor on a thread of its own whose jobs can be held: while it is paused, the tasks that
/// prefer it make no progress, whatever the event loops do meanwhile. A test parks an in-process
/// server's accept loop with it to stage "connections accepted, not yet taken by the loop".
public final class PausableExecutor: TaskExecutor {
    private let queue: DispatchQueue
    private let held = Mutex<(paused: Bool, jobs: [UnownedJob])>((false, []))

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let run = held.withLock { state -> Bool in
            if state.paused { state.jobs.append(job) }
            return !state.paused
        }
        if run { queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) } }
    }

    /// Holds every job enqueued from now on.
    public func pause() { held.withLock { $0.paused = true } }

    /// Runs the held jobs, in order, and every later one.
    public func resume() {
        let jobs = held.withLock { state -> [UnownedJob] in
            state.paused = false
            defer { state.jobs = [] }
            return state.jobs
        }
        for job in jobs { queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) } }
    }
}
