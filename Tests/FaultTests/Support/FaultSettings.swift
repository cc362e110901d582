import Foundation
import Testing

/// Which fault scenarios run, and how hard, from `SHOPLEDGER_FAULT_TESTS`:
///
/// - unset (a plain `swift test`, every suite at once): none; they spawn servers and load them, which
///   slows the suites with tight time bounds running beside them (and is slowed by them);
/// - `quick` (`make test` runs FaultTests on their own after the other suites): every scenario, short loads;
/// - `all` (`make test-faults`): every scenario, full loads.
enum FaultSettings {
    private static var mode: String {
        (ProcessInfo.processInfo.environment["SHOPLEDGER_FAULT_TESTS"] ?? "").lowercased()
    }

    /// Full loads.
    static var all: Bool { ["all", "1", "true", "yes"].contains(mode) }

    /// The scenarios run at all.
    static var enabled: Bool { all || mode == "quick" }

    static let disabledReason: Comment = "set SHOPLEDGER_FAULT_TESTS=quick or all (make test and make test-faults do)"

    /// How many purchases the load should get acknowledged before the fault strikes.
    static var acknowledgedBeforeFault: Int { all ? 600 : 150 }

    /// How many concurrent clients load the server: half as many outside `make test-faults`.
    static func clients(_ full: Int) -> Int { all ? full : max(2, full / 2) }
}
