import Foundation
import Testing

/// `shopledger --version` is how an operator tells which code a binary is: the release and the commit
/// must both be there, in a fixed shape a script can parse, from the real binary (the commit is
/// embedded at build time, so only the built executable shows it).
@Suite("shopledger --version, with the real binary")
struct VersionTests {
    @Test("--version prints the release and the build commit", .timeLimit(.minutes(1)))
    func versionNamesReleaseAndCommit() async throws {
        let (status, output) = try await Spawned.run([try ServerProcess.binary(), "--version"], timeout: .seconds(30))
        #expect(status == .exited(0), "\(output)")
        let line = output.trimmingCharacters(in: .whitespacesAndNewlines)
        // 12 hex digits (maybe -dirty), `unknown` outside a checkout, or what SHOPLEDGER_BUILD_COMMIT said.
        let shape = try NSRegularExpression(
            pattern: #"^shopledger [0-9]+\.[0-9]+\.[0-9]+ \(commit [A-Za-z0-9._+-]+\)$"#)
        #expect(
            shape.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil,
            "unexpected --version output: \(line)")
        let root = ConfigurationDocsTests.docsFolder.deletingLastPathComponent()
        let changelog = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let version = line.split(separator: " ")[1]
        #expect(changelog.contains("## [\(version)]"), "CHANGELOG.md has no entry for \(version)")
    }
}
