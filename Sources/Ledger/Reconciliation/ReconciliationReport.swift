import Foundation

/// One thing a check found wrong: the id of the broken row(s) and what is wrong with them.
public struct ReconciliationFailure: Sendable, Hashable, Codable {
    public var id: String
    public var detail: String

    public init(id: String, detail: String) {
        self.id = id
        self.detail = detail
    }
}

/// What one check examined and what failed.
public struct ReconciliationCheckResult: Sendable, Hashable, Codable {
    public var name: String
    public var summary: String
    public var examined: Int
    public var examinedWhat: String
    /// All failures found; `failures` lists at most the reconciler's limit of them.
    public var failureCount: Int
    public var failures: [ReconciliationFailure]

    public init(
        name: String, summary: String, examined: Int, examinedWhat: String, failureCount: Int,
        failures: [ReconciliationFailure]
    ) {
        self.name = name
        self.summary = summary
        self.examined = examined
        self.examinedWhat = examinedWhat
        self.failureCount = failureCount
        self.failures = failures
    }

    public var passed: Bool { failureCount == 0 }

    enum CodingKeys: String, CodingKey {
        case name, summary, examined, examinedWhat, failureCount, failures, passed
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try container.decode(String.self, forKey: .name),
            summary: try container.decode(String.self, forKey: .summary),
            examined: try container.decode(Int.self, forKey: .examined),
            examinedWhat: try container.decode(String.self, forKey: .examinedWhat),
            failureCount: try container.decode(Int.self, forKey: .failureCount),
            failures: try container.decode([ReconciliationFailure].self, forKey: .failures))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(summary, forKey: .summary)
        try container.encode(examined, forKey: .examined)
        try container.encode(examinedWhat, forKey: .examinedWhat)
        try container.encode(failureCount, forKey: .failureCount)
        try container.encode(failures, forKey: .failures)
        try container.encode(passed, forKey: .passed)
    }
}

/// The result of one reconciliation run: every check, all from one database snapshot.
public struct ReconciliationReport: Sendable, Hashable, Codable {
    public var checkedAt: Date
    public var checks: [ReconciliationCheckResult]

    public init(checkedAt: Date, checks: [ReconciliationCheckResult]) {
        self.checkedAt = checkedAt
        self.checks = checks
    }

    public var passed: Bool { checks.allSatisfy(\.passed) }
    public var failedChecks: [ReconciliationCheckResult] { checks.filter { !$0.passed } }

    /// For people: one line per check, then its failures indented.
    public var text: String {
        var lines: [String] = []
        for check in checks {
            let verdict = check.passed ? "PASS" : "FAIL"
            var line = "\(verdict) \(check.name): examined \(check.examined) \(check.examinedWhat)"
            if !check.passed { line += ", \(check.failureCount) failed" }
            lines.append(line)
            lines.append("     \(check.summary)")
            for failure in check.failures {
                lines.append("     - \(failure.id): \(failure.detail)")
            }
            if check.failureCount > check.failures.count {
                lines.append("     ... and \(check.failureCount - check.failures.count) more")
            }
        }
        let failed = failedChecks.count
        lines.append(
            failed == 0
                ? "reconcile: all \(checks.count) checks passed"
                : "reconcile: \(failed) of \(checks.count) checks failed")
        return lines.joined(separator: "\n")
    }

    /// For machines: the report as JSON (sorted keys, ISO 8601 dates), with `passed` per check and overall.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(Envelope(report: self)), as: UTF8.self)
    }

    private struct Envelope: Encodable {
        let report: ReconciliationReport
        enum CodingKeys: String, CodingKey { case checkedAt, checks, passed }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(report.checkedAt, forKey: .checkedAt)
            try container.encode(report.checks, forKey: .checks)
            try container.encode(report.passed, forKey: .passed)
        }
    }
}
