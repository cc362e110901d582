import Foundation

/// A per-user allowance: at most `count` in `seconds`, refilled evenly (a token bucket of `count`
/// tokens, one back every `seconds / count`). Written `COUNT/SECONDS` on the command line; `off` (or 0)
/// for no limit.
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    public var count: Int
    public var seconds: Double

    public init(count: Int, seconds: Double) {
        self.count = count
        self.seconds = seconds
    }

    /// No limit.
    public static let off = RateLimit(count: 0, seconds: 0)

    public var isOff: Bool { count == 0 }

    /// `COUNT/SECONDS` (e.g. `6/3600`), or `off`/`0`; nil when it is neither.
    public init?(parsing text: String) {
        let text = text.trimmingCharacters(in: .whitespaces).lowercased()
        if text == "off" || text == "0" {
            self = .off
            return
        }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[0]), let seconds = Double(parts[1]), count > 0,
            count <= 1_000_000, seconds.isFinite, seconds >= 1, seconds <= 7 * 24 * 3600
        else { return nil }
        self.init(count: count, seconds: seconds)
    }

    public var description: String { isOff ? "off" : "\(count)/\(Self.format(seconds))" }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
