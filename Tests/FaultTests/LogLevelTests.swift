import Foundation
import Testing

/// `SHOPLEDGER_LOG_LEVEL` sets the level; a value that is no level stops the start naming the variable;
/// the former `LOG_LEVEL` still works but warns. From the real binary: logging is set up before any
/// command runs, so only its start shows this.
@Suite("SHOPLEDGER_LOG_LEVEL and the deprecated LOG_LEVEL, with the real binary")
struct LogLevelTests {
    static func run(_ variables: [String: String]) async throws -> (passed: Bool, output: String) {
        let (status, output) = try await Spawned.run(
            [try ServerProcess.binary(), "--version"], environment: Spawned.environment(variables),
            timeout: .seconds(30))
        return (status == .exited(0), output)
    }

    @Test("a bad SHOPLEDGER_LOG_LEVEL or LOG_LEVEL stops the start, naming the variable", .timeLimit(.minutes(1)))
    func badLevelRefused() async throws {
        for name in ["SHOPLEDGER_LOG_LEVEL", "LOG_LEVEL"] {
            let (passed, output) = try await Self.run([name: "loud"])
            #expect(!passed, "\(name)=loud was accepted: \(output)")
            #expect(output.contains("\(name) must be one of"), "\(output)")
        }
    }

    @Test("LOG_LEVEL alone still works, with a deprecation warning; SHOPLEDGER_LOG_LEVEL alone warns of nothing")
    func deprecatedNameWarns() async throws {
        let old = try await Self.run(["LOG_LEVEL": "info"])
        #expect(old.passed && old.output.contains("LOG_LEVEL is deprecated: set SHOPLEDGER_LOG_LEVEL"), "\(old.output)")
        let new = try await Self.run(["SHOPLEDGER_LOG_LEVEL": "debug"])
        #expect(new.passed && !new.output.contains("deprecated"), "\(new.output)")
        let both = try await Self.run(["SHOPLEDGER_LOG_LEVEL": "info", "LOG_LEVEL": "debug"])
        #expect(both.passed && both.output.contains("deprecated and ignored"), "\(both.output)")
    }
}
