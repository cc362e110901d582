import ArgumentParser
import Foundation

/// The `SHOPLEDGER_*` variables set when a command starts, held to the settings the commands declare:
/// a name no command takes (`SHOPLEDGER_PROT`, `SHOPLEDGER_REQUEST_TIMEOUT_S`) would otherwise be
/// ignored and the server start on defaults, so it stops the command, with the closest name it may have
/// meant; so does a value with spaces or a line break around it (`SHOPLEDGER_PORT=" 9150"`), which
/// is a quoting mistake in an environment file more often than meant.
enum EnvironmentCheck {
    /// Variables of the build, the tests and the fuzzers, which the shopledger binary does not read and
    /// leaves alone (a developer's shell may hold them): not settings, so not declared in any `--help`.
    static let toolVariables: Set<String> = [
        "SHOPLEDGER_BINARY", "SHOPLEDGER_BUILD_COMMIT", "SHOPLEDGER_DIST_SCRATCH", "SHOPLEDGER_DIST_TARBALL",
        "SHOPLEDGER_FAULT_TESTS", "SHOPLEDGER_FUZZ_DIR", "SHOPLEDGER_FUZZ_SEED", "SHOPLEDGER_FUZZ_TARGET",
        "SHOPLEDGER_HA_FAULTS", "SHOPLEDGER_HA_ROUNDS", "SHOPLEDGER_IN_PROCESS_FLOOD", "SHOPLEDGER_LIBFUZZER",
        "SHOPLEDGER_TEST_DATABASE_URL",
    ]

    static let prefix = "SHOPLEDGER_"

    /// Every `SHOPLEDGER_*` variable some command's `--help` names. The options declare their variable
    /// there and only there ("Default: $SHOPLEDGER_PORT or 8080"), so this is the list of settings,
    /// not a second one kept by hand.
    static func declaredVariables(of root: any ParsableCommand.Type = ShopLedgerCommand.self) -> Set<String> {
        var names: Set<String> = []
        var pending: [any ParsableCommand.Type] = [root]
        while let command = pending.popLast() {
            let help = root.helpMessage(for: command, includeHidden: true, columns: 100_000)
            names.formUnion(variableNames(in: help))
            pending.append(contentsOf: command.configuration.subcommands)
        }
        return names
    }

    /// The `SHOPLEDGER_[A-Z0-9_]+` words of `text` (a trailing `_`, as in "SHOPLEDGER_APP_STORE_*", dropped).
    static func variableNames(in text: String) -> Set<String> {
        var names: Set<String> = []
        var rest = text[...]
        while let start = rest.range(of: prefix) {
            let tail = rest[start.upperBound...]
            let body = tail.prefix { $0.isASCII && ($0.isUppercase || $0.isNumber || $0 == "_") }
            var name = prefix + body
            while name.hasSuffix("_") { name.removeLast() }
            if name.count > prefix.count { names.insert(name) }
            rest = tail[body.endIndex...]
        }
        return names
    }

    /// What is wrong with the `SHOPLEDGER_*` variables of `environment`, one message per variable, each
    /// naming it; empty when nothing is. Empty values count as unset, as everywhere else.
    static func problems(in environment: [String: String], declared: Set<String>) -> [String] {
        var problems: [String] = []
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix(prefix) {
            if toolVariables.contains(name) { continue }
            guard declared.contains(name) else {
                if let guess = closest(to: name, among: declared) {
                    problems.append("\(name) is not a setting of shopledger; did you mean \(guess)?")
                } else {
                    problems.append(
                        "\(name) is not a setting of shopledger ('shopledger <command> --help' lists each command's)")
                }
                continue
            }
            guard !value.isEmpty else { continue }
            if value.first!.isWhitespace || value.last!.isWhitespace {
                problems.append(
                    "\(name) has spaces or a line break around its value \(String(value.prefix(40)).debugDescription); "
                        + "remove them (in an environment file, quotes are not needed)")
            }
        }
        return problems
    }

    /// Stops the command (a `ValidationError`, exit 64) when the process environment has a problem.
    static func check(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        // Most commands run with no SHOPLEDGER_* variable at all: no --help is rendered for them.
        guard environment.keys.contains(where: { $0.hasPrefix(prefix) && !toolVariables.contains($0) }) else {
            return
        }
        let problems = problems(in: environment, declared: declaredVariables())
        guard problems.isEmpty else { throw ValidationError(problems.joined(separator: "\n")) }
    }

    /// The declared name nearest `name`, when it is near enough to be a typo: at most 2 edits (3 for
    /// names of 16 characters or more) where a swap of two neighbours counts as one.
    static func closest(to name: String, among declared: Set<String>) -> String? {
        let word = Array(name.dropFirst(prefix.count))
        let limit = word.count >= 16 ? 3 : 2
        var best: (name: String, distance: Int)?
        for candidate in declared.sorted() {
            let distance = editDistance(word, Array(candidate.dropFirst(prefix.count)))
            if distance <= limit, distance < best?.distance ?? .max { best = (candidate, distance) }
        }
        return best?.name
    }

    /// Damerau–Levenshtein distance (optimal string alignment): insertions, deletions, substitutions and
    /// swaps of two neighbours each cost one.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
