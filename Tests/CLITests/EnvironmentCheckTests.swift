import ArgumentParser
import Foundation
import Testing

@testable import shopledger

/// Unknown `SHOPLEDGER_*` names and values with spaces around them stop a command, each message naming
/// its variable; the known names are the ones the commands' `--help` declares.
@Suite("EnvironmentCheck: unknown SHOPLEDGER_* names and padded values refused")
struct EnvironmentCheckTests {
    static let declared = EnvironmentCheck.declaredVariables()

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    @Test("the declared names are every command's settings, from their --help")
    func declaredNames() {
        for name in [
            "SHOPLEDGER_PORT", "SHOPLEDGER_HOST", "SHOPLEDGER_DATABASE_URL", "SHOPLEDGER_LOG_LEVEL",
            "SHOPLEDGER_LOG_FORMAT", "SHOPLEDGER_SHUTDOWN_GRACE", "SHOPLEDGER_STOP_TIMEOUT", "SHOPLEDGER_METRICS_TOKEN",
            "SHOPLEDGER_STANDBY_PORT", "SHOPLEDGER_APP_STORE_CONNECT_KEY_ID", "SHOPLEDGER_REQUEST_TIMEOUT",
        ] {
            #expect(Self.declared.contains(name), "\(name) is declared")
        }
        #expect(Self.declared.isDisjoint(with: EnvironmentCheck.toolVariables))
        #expect(!Self.declared.contains { $0.hasSuffix("_") })
    }

    /// A variable the binary reads but no `--help` names would be refused at every start: every name the
    /// sources quote (`Environment.string("SHOPLEDGER_…")`) is a setting some command declares, or a
    /// variable of the build and test tools; so is every name the Makefile and the scripts set.
    @Test("every SHOPLEDGER_* name the sources read or the scripts set is declared by a --help or is a tool's")
    func everyNameKnown() throws {
        var unknown: [String: String] = [:]
        var files = 0
        func scan(_ path: URL, quotedOnly: Bool) {
            guard let text = try? String(contentsOf: path, encoding: .utf8) else { return }
            files += 1
            var names = EnvironmentCheck.variableNames(in: text)
            if quotedOnly { names = names.filter { text.contains("\"\($0)\"") } }
            for name in names where !Self.declared.contains(name) && !EnvironmentCheck.toolVariables.contains(name) {
                unknown[name] = path.path.replacingOccurrences(of: Self.repository.path + "/", with: "")
            }
        }
        for folder in ["Sources", "scripts", ".ci"] {
            let root = Self.repository.appendingPathComponent(folder)
            let paths = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
            while let path = paths?.nextObject() as? URL {
                guard ["swift", "sh"].contains(path.pathExtension) || path.lastPathComponent == "run" else { continue }
                scan(path, quotedOnly: path.pathExtension == "swift")
            }
        }
        scan(Self.repository.appendingPathComponent("Makefile"), quotedOnly: false)
        #expect(files > 100, "read the sources")
        #expect(unknown.isEmpty, "neither declared in a --help nor a tool's: \(unknown)")
    }

    @Test(
        "a misspelt name is refused with the name it was probably meant to be",
        arguments: [
            ("SHOPLEDGER_PROT", "SHOPLEDGER_PORT"),
            ("SHOPLEDGER_REQUEST_TIMEOUT_S", "SHOPLEDGER_REQUEST_TIMEOUT"),
            ("SHOPLEDGER_DATABSE_URL", "SHOPLEDGER_DATABASE_URL"),
            ("SHOPLEDGER_LOGLEVEL", "SHOPLEDGER_LOG_LEVEL"),
            ("SHOPLEDGER_SHUTDOWN_GRACE_PERIOD", nil),
        ] as [(String, String?)])
    func misspelt(name: String, meant: String?) {
        let problems = EnvironmentCheck.problems(in: [name: "9150"], declared: Self.declared)
        if let meant {
            #expect(problems == ["\(name) is not a setting of shopledger; did you mean \(meant)?"])
        } else {
            #expect(
                problems == [
                    "\(name) is not a setting of shopledger ('shopledger <command> --help' lists each command's)"
                ])
        }
    }

    @Test("a value with spaces or a line break around it is refused naming its variable")
    func paddedValues() {
        let problems = EnvironmentCheck.problems(
            in: ["SHOPLEDGER_PORT": " 9150", "SHOPLEDGER_ADMIN_TOKEN": "0123456789abcdef0123\n", "HOME": " /root "],
            declared: Self.declared)
        #expect(
            problems == [
                #"SHOPLEDGER_ADMIN_TOKEN has spaces or a line break around its value "0123456789abcdef0123\n"; remove them (in an environment file, quotes are not needed)"#,
                #"SHOPLEDGER_PORT has spaces or a line break around its value " 9150"; remove them (in an environment file, quotes are not needed)"#,
            ])
    }

    @Test("settings, empty values, tools' variables and other names pass")
    func accepted() throws {
        let environment = [
            "SHOPLEDGER_PORT": "9150", "SHOPLEDGER_HOST": "", "SHOPLEDGER_FAULT_TESTS": "quick",
            "SHOPLEDGER_TEST_DATABASE_URL": " x ", "PATH": "/usr/bin", "SHOPLEDGERPORT": "1",
        ]
        #expect(EnvironmentCheck.problems(in: environment, declared: Self.declared).isEmpty)
        try EnvironmentCheck.check(environment)
        #expect(throws: Never.self) { try EnvironmentCheck.check([:]) }
    }

    @Test("check throws one ValidationError naming every bad variable")
    func checkThrows() {
        do {
            try EnvironmentCheck.check(["SHOPLEDGER_PROT": "9150", "SHOPLEDGER_PORT": "9150 "])
            Issue.record("accepted")
        } catch {
            #expect(
                ShopLedgerCommand.message(for: error)
                    == "SHOPLEDGER_PORT has spaces or a line break around its value \"9150 \"; remove them (in an environment file, quotes are not needed)\n"
                    + "SHOPLEDGER_PROT is not a setting of shopledger; did you mean SHOPLEDGER_PORT?")
            #expect(ShopLedgerCommand.exitCode(for: error).rawValue == 64)
        }
    }

    @Test("edit distance: a swap of neighbours is one edit")
    func editDistance() {
        func distance(_ a: String, _ b: String) -> Int { EnvironmentCheck.editDistance(Array(a), Array(b)) }
        #expect(distance("PROT", "PORT") == 1)
        #expect(distance("PORT", "PORT") == 0)
        #expect(distance("", "PORT") == 4)
        #expect(distance("REQUEST_TIMEOUT_S", "REQUEST_TIMEOUT") == 2)
        #expect(distance("HOST", "PORT") == 2)
        #expect(EnvironmentCheck.closest(to: "SHOPLEDGER_X", among: Self.declared) == nil)
    }
}
