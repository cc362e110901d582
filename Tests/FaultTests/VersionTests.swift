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

    @Test("--version --json: the same release and commit, and the schema's migrations with whether each is additive")
    func versionJSON() async throws {
        let binary = try ServerProcess.binary()
        let (_, line) = try await Spawned.run([binary, "--version"], timeout: .seconds(30))
        for arguments in [["--version", "--json"], ["--json", "--version"]] {
            let (status, output) = try await Spawned.run([binary] + arguments, timeout: .seconds(30))
            #expect(status == .exited(0), "\(output)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
            let version = try #require(object["version"] as? String)
            let commit = try #require(object["commit"] as? String)
            #expect(line.trimmingCharacters(in: .whitespacesAndNewlines) == "shopledger \(version) (commit \(commit))")
            let migrations = try #require(object["migrations"] as? [[String: Any]])
            let files = try FileManager.default.contentsOfDirectory(
                atPath: ConfigurationDocsTests.docsFolder.deletingLastPathComponent().appendingPathComponent(
                    "sql/migrations"
                ).path
            ).filter { $0.hasSuffix(".sql") }.sorted()
            #expect(migrations.map { $0["name"] as? String } == files)
            #expect(object["schema_version"] as? Int == migrations.last?["version"] as? Int)
            // Additive exactly where the file's header says so.
            for migration in migrations {
                let name = try #require(migration["name"] as? String)
                let text = try String(
                    contentsOf: ConfigurationDocsTests.docsFolder.deletingLastPathComponent().appendingPathComponent(
                        "sql/migrations/\(name)"), encoding: .utf8)
                #expect(
                    migration["additive"] as? Bool == text.hasPrefix("-- shopledger: additive"), "\(name)")
            }
        }
    }
}
