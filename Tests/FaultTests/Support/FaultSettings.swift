import Foundation

/// Which fault scenarios run, and how hard, from `SHOPLEDGER_FAULT_TESTS`:
///
/// - unset (a plain `swift test`, every suite at once): the SIGKILL and SIGTERM scenarios, short loads;
/// - `quick` (`make test` runs FaultTests on their own after the other suites): every scenario, short loads;
/// - `all` (`make test-faults`): every scenario, full loads.
///
/// The PostgreSQL crash and the stuck request stay out of the plain run: their time bounds want a
/// machine that is not also running 200 other tests.
enum FaultSettings {
    private static var mode: String { (ProcessInfo.processInfo.environment["SHOPLEDGER_FAULT_TESTS"] ?? "").lowercased() }

    /// Full loads.
    static var all: Bool { ["all", "1", "true", "yes"].contains(mode) }

    /// Every scenario, including those with time bounds.
    static var everyScenario: Bool { all || mode == "quick" }

    /// How many purchases the load should get acknowledged before the fault strikes.
    static var acknowledgedBeforeFault: Int { all ? 600 : 150 }

    /// How many concurrent clients load the server: half as many outside `make test-faults`.
    static func clients(_ full: Int) -> Int { all ? full : max(2, full / 2) }
}
