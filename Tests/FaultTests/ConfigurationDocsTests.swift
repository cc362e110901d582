import Foundation
import Testing

/// Docs drift unless a test holds them to the code: every flag and every `SHOPLEDGER_*` variable that
/// any command's `--help` names is in docs/configuration.md, the page that says it lists them all.
@Suite("docs/configuration.md names every option --help shows")
struct ConfigurationDocsTests {
    static var docsFolder: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs")
    }

    /// Every command path (`[]`, `["serve"]`, `["report", "daily"]`, ...) with its `--help` text.
    static func helpTexts() async throws -> [([String], String)] {
        var found: [([String], String)] = []
        var pending: [[String]] = [[]]
        while let command = pending.popLast() {
            let (status, help) = try await Spawned.run([try ServerProcess.binary()] + command + ["--help"])
            guard status == .exited(0) else { throw FaultTestError("\(command) --help: \(status)\n\(help)") }
            found.append((command, help))
            guard command.count < 3, let section = help.range(of: "SUBCOMMANDS:") else { continue }
            // The section's lines up to the first blank one; names start two spaces in and are
            // lowercase (descriptions wrap further in; "See 'shopledger help ...'" follows the blank line).
            for line in help[section.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
            {
                if line.trimmingCharacters(in: .whitespaces).isEmpty { break }
                guard line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first,
                    name.allSatisfy({ $0.isLowercase || $0 == "-" }), name != "help"
                else { continue }
                pending.append(command + [String(name)])
            }
        }
        return found
    }

    static func matches(_ pattern: String, in text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: pattern)
        return Set(
            regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
                Range($0.range, in: text).map { String(text[$0]) }
            })
    }

    @Test(
        "every flag and SHOPLEDGER_* variable of every command is in docs/configuration.md",
        .enabled(if: FaultSettings.enabled, FaultSettings.disabledReason), .timeLimit(.minutes(2)))
    func everyOptionDocumented() async throws {
        let docs = try String(
            contentsOf: Self.docsFolder.appendingPathComponent("configuration.md"), encoding: .utf8)
        let documented = Self.matches("--[a-z0-9][a-z0-9-]*", in: docs).union(
            Self.matches("SHOPLEDGER_[A-Z0-9_]+", in: docs))
        let texts = try await Self.helpTexts()
        #expect(texts.count > 15, "found the commands: \(texts.map(\.0))")
        for (command, help) in texts {
            let named = Self.matches("--[a-z0-9][a-z0-9-]*", in: help).union(
                Self.matches("SHOPLEDGER_[A-Z0-9_]+", in: help)
            )
            .subtracting(["--help", "--version"])
            let missing = named.subtracting(documented).sorted()
            #expect(
                missing.isEmpty,
                "shopledger \(command.joined(separator: " ")): not in docs/configuration.md: \(missing)")
        }
    }
}
