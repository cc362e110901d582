import Foundation

/// Which fault scenarios run. `make test` runs the quick ones; `make test-faults` sets
/// `SHOPLEDGER_FAULT_TESTS=all` and runs every one (with longer loads).
enum FaultSettings {
    static var all: Bool {
        ["all", "1", "true", "yes"].contains((ProcessInfo.processInfo.environment["SHOPLEDGER_FAULT_TESTS"] ?? "").lowercased())
    }

    /// How many purchases the load should get acknowledged before the fault strikes.
    static var acknowledgedBeforeFault: Int { all ? 600 : 150 }
}
