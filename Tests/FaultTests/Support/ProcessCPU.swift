import Foundation

/// The CPU time a process has used so far, from `/proc/<pid>/stat` (user plus system).
enum ProcessCPU {
    static func seconds(_ pid: pid_t) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The share of one core `pid` used over `window`.
    static func usage(_ pid: pid_t, over window: Duration) async throws -> Double? {
        guard let before = seconds(pid) else { return nil }
        try await Task.sleep(for: window)
        guard let after = seconds(pid) else { return nil }
        let (whole, attoseconds) = window.components
        return (after - before) / (Double(whole) + Double(attoseconds) / 1e18)
    }
}
