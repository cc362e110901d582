/// What a target made of one input. Fuzzing ignores it; the corpus tests check that the seeds meant to be
/// valid are accepted, so that fuzzing starts from inputs that reach the deepest checks.
public enum FuzzOutcome: Sendable, Hashable, CustomStringConvertible {
    case accepted
    /// Refused, with the refusal's code (`malformed_receipt`, `invalid_signature`, ...).
    case refused(String)

    public var description: String {
        switch self {
        case .accepted: "accepted"
        case .refused(let code): "refused (\(code))"
        }
    }
}
