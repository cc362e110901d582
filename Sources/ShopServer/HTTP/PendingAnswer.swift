import Hummingbird
import Synchronization

/// A request's answer, given by whichever comes first: its work finishing, its hard deadline, or its
/// connection going away. The first decides; the later ones are dropped.
///
/// The request is answered at its deadline even when its work has not stopped (work that ignores
/// cancellation, or the database client still within its cancel grace): the client is not kept
/// waiting past the timeout it was promised, and the work ends on its own.
final class PendingAnswer: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Result<Response, any Error>, Never>?)
        case answered(Result<Response, any Error>)
        case delivered
    }

    private let state = Mutex(State.waiting(nil))

    /// Answers with `result` unless an answer was given already.
    func give(_ result: Result<Response, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<Response, any Error>, Never>? in
            switch state {
            case .waiting(let continuation?):
                state = .delivered
                return continuation
            case .waiting(nil):
                state = .answered(result)
                return nil
            case .answered, .delivered:
                return nil
            }
        }
        continuation?.resume(returning: result)
    }

    /// The answer, once one is given.
    func wait() async -> Result<Response, any Error> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<Response, any Error>? in
                switch state {
                case .waiting:
                    state = .waiting(continuation)
                    return nil
                case .answered(let result):
                    state = .delivered
                    return result
                case .delivered:
                    preconditionFailure("PendingAnswer.wait() called twice")
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
