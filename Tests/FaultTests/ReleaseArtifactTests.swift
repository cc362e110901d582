import Foundation
import NIOHTTP1
import Testing

/// Where the release artifact under test is: `SHOPLEDGER_DIST_TARBALL`, the path `scripts/dist.sh` (`make dist`)
/// prints; `make test-faults` builds it and sets it. Unset (`make test`, which builds no release): the tests
/// are disabled, saying so.
enum ReleaseArtifact {
    static var tarball: String? {
        guard let path = ProcessInfo.processInfo.environment["SHOPLEDGER_DIST_TARBALL"], !path.isEmpty else {
            return nil
        }
        return path
    }

    static let disabledReason: Comment =
        "set SHOPLEDGER_DIST_TARBALL to the tarball scripts/dist.sh builds (make test-faults does)"

    /// What the tarball holds, in its one top folder.
    static let files: Set<String> = [
        "shopledger", "shopledger.service", "shopledger.env.example", "README.md", "CHANGELOG.md", "prometheus",
        "grafana", "pgbackrest",
    ]

    /// The libraries the binary may name (ELF `NEEDED`): glibc's, libpq, the C++ runtime the Swift runtime
    /// is built on (libstdc++6 and libgcc-s1 are in every Debian: apt itself needs them), and zlib (zlib1g,
    /// priority required: in every Debian), which the package's `CZlib` system library (`link "z"`) adds to
    /// the link: `apple sales import` inflates Apple's gzip'd reports with it.
    static let allowedNeeded: Set<String> = [
        "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libutil.so.1",
        "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libpq.so.5", "libstdc++.so.6", "libgcc_s.so.1",
        "libz.so.1",
    ]

    /// Libraries of the Swift toolchain, which a host without the toolchain has not.
    static let toolchainLibraries = [
        "libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime", "libicu", "libXCTest",
        "libTesting",
    ]

    /// An environment with nothing a host would not have: no `LD_LIBRARY_PATH` to find the toolchain's
    /// libraries with, no `SHOPLEDGER_*`.
    static let bareEnvironment = ["PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"]

    /// The artifact unpacked in a new empty folder: the top folder's path, and the tarball's own name
    /// without `.tar.gz`.
    static func unpack(into parent: String) async throws -> (folder: String, name: String) {
        guard let tarball else { throw FaultTestError("SHOPLEDGER_DIST_TARBALL is not set") }
        let target = parent + "/unpacked"
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty)
        let (status, output) = try await Spawned.run(
            ["/usr/bin/tar", "-xzf", tarball, "-C", target], environment: bareEnvironment)
        guard status == .exited(0) else { throw FaultTestError("tar -xzf \(tarball): \(status)\n\(output)") }
        let top = try FileManager.default.contentsOfDirectory(atPath: target)
        let name = URL(fileURLWithPath: tarball).lastPathComponent.replacingOccurrences(of: ".tar.gz", with: "")
        guard top == [name] else {
            throw FaultTestError("the tarball should hold one folder, \(name); it holds \(top)")
        }
        return (target + "/" + name, name)
    }

    /// `/usr/bin/<tool>`, which the checks need (Debian's libc-bin, binutils, systemd).
    static func tool(_ path: String) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FaultTestError("\(path) is missing: the release artifact's checks need it")
        }
        return path
    }

    static func run(
        _ command: [String], environment: [String: String] = bareEnvironment
    ) async throws
        -> (status: Spawned.Termination, output: String)
    {
        try await Spawned.run(command, environment: environment, timeout: .seconds(60))
    }

    /// `SHOPLEDGER_*` names in `text`.
    static func variables(in text: String) -> Set<String> {
        ConfigurationDocsTests.matches("SHOPLEDGER_[A-Z0-9_]+", in: text)
    }

    /// The env file's settings, as systemd's EnvironmentFile= reads them: `NAME=value` lines; `#` starts
    /// a comment line.
    static func settings(of envFile: String) -> [String: String] {
        var settings: [String: String] = [:]
        for line in envFile.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#"), let equals = trimmed.firstIndex(of: "=") else {
                continue
            }
            settings[String(trimmed[..<equals])] = String(trimmed[trimmed.index(after: equals)...])
        }
        return settings
    }
}

@Suite("The release artifact (make dist): unpacked on its own, its binary, unit and env file")
struct ReleaseArtifactTests {
    @Test(
        "the tarball holds the binary, the unit, the env example and the README; the binary needs no Swift library and names its release",
        .enabled(if: ReleaseArtifact.tarball != nil, ReleaseArtifact.disabledReason), .timeLimit(.minutes(2)))
    func contentsAndLibraries() async throws {
        let parent = try FaultResources.newFolder()
        FaultResources.register(folder: parent)
        defer { FaultResources.release(folder: parent) }
        let (folder, name) = try await ReleaseArtifact.unpack(into: parent)
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
        #expect(files == ReleaseArtifact.files)
        for file in [
            "prometheus/prometheus.yml", "prometheus/shopledger-rules.yml", "prometheus/shopledger-rules.test.yml",
            "prometheus/patroni-rules.yml", "prometheus/patroni-rules.test.yml",
            "grafana/shopledger-dashboard.json", "pgbackrest/pgbackrest.conf", "pgbackrest/shopledger-backup@.service",
            "pgbackrest/shopledger-backup-full.timer", "pgbackrest/shopledger-backup-diff.timer",
            "pgbackrest/shopledger-secrets-backup.service", "pgbackrest/shopledger-secrets-backup.timer",
        ] {
            #expect(FileManager.default.fileExists(atPath: folder + "/" + file), "\(file) is not in the tarball")
        }
        #expect(
            FileManager.default.isExecutableFile(atPath: folder + "/pgbackrest/shopledger-secrets-backup"),
            "pgbackrest/shopledger-secrets-backup is not in the tarball, executable")
        let binary = folder + "/shopledger"
        #expect(FileManager.default.isExecutableFile(atPath: binary))

        // What the dynamic loader finds, without the toolchain's folders on any path.
        let (lddStatus, ldd) = try await ReleaseArtifact.run([try ReleaseArtifact.tool("/usr/bin/ldd"), binary])
        #expect(lddStatus == .exited(0), "\(ldd)")
        let lines = ldd.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { !$0.contains("not found") }, "missing libraries:\n\(ldd)")
        let swiftLines = lines.filter { line in ReleaseArtifact.toolchainLibraries.contains { line.contains($0) } }
        #expect(swiftLines.isEmpty, "the binary needs Swift's libraries: \(swiftLines)")
        // What the binary itself names (ldd also lists what libpq needs in turn).
        let (readelfStatus, dynamic) = try await ReleaseArtifact.run([
            try ReleaseArtifact.tool("/usr/bin/readelf"), "--dynamic", binary,
        ])
        #expect(readelfStatus == .exited(0), "\(dynamic)")
        let needed = Set(
            ConfigurationDocsTests.matches(#"\(NEEDED\)[^\[]*\[[^\]]+\]"#, in: dynamic).compactMap { entry in
                entry.split(separator: "[").last.map { String($0.dropLast()) }
            })
        #expect(needed.contains("libpq.so.5") && needed.contains("libc.so.6"), "NEEDED: \(needed.sorted())")
        #expect(
            needed.isSubset(of: ReleaseArtifact.allowedNeeded),
            "needs more than glibc, libpq and the C++ runtime: \(needed.subtracting(ReleaseArtifact.allowedNeeded).sorted())"
        )

        // `shopledger 0.9.0 (commit 0123456789ab)`, its release in the tarball's name and its CHANGELOG.
        let (status, output) = try await ReleaseArtifact.run([binary, "--version"])
        #expect(status == .exited(0), "\(output)")
        let line = output.trimmingCharacters(in: .whitespacesAndNewlines)
        let shape = try NSRegularExpression(
            pattern: #"^shopledger ([0-9]+\.[0-9]+\.[0-9]+) \(commit [A-Za-z0-9._+-]+\)$"#)
        let match = try #require(
            shape.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)), "--version printed: \(line)")
        let version = String(line[Range(match.range(at: 1), in: line)!])
        let (unameStatus, machine) = try await ReleaseArtifact.run(["/usr/bin/uname", "-m"])
        #expect(unameStatus == .exited(0))
        let arch = machine.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(name == "shopledger-\(version)-linux-\(arch)")
        let changelog = try String(contentsOfFile: folder + "/CHANGELOG.md", encoding: .utf8)
        #expect(changelog.contains("## [\(version)]"), "CHANGELOG.md has no entry for \(version)")
    }

    @Test(
        "the env example names every serve setting and only those; the README installs what the unit runs",
        .enabled(if: ReleaseArtifact.tarball != nil, ReleaseArtifact.disabledReason), .timeLimit(.minutes(2)))
    func envExampleAndReadme() async throws {
        let parent = try FaultResources.newFolder()
        FaultResources.register(folder: parent)
        defer { FaultResources.release(folder: parent) }
        let (folder, _) = try await ReleaseArtifact.unpack(into: parent)
        let (status, help) = try await ReleaseArtifact.run([folder + "/shopledger", "serve", "--help"])
        #expect(status == .exited(0), "\(help)")
        let served = ReleaseArtifact.variables(in: help)
        #expect(served.count > 30, "serve --help names \(served.sorted())")
        // The log level applies to every command, so `serve --help` does not name it; configuration.md does.
        let everyCommand: Set = ["SHOPLEDGER_LOG_LEVEL"]
        let configuration = try String(
            contentsOf: ConfigurationDocsTests.docsFolder.appendingPathComponent("configuration.md"), encoding: .utf8)
        #expect(everyCommand.allSatisfy { configuration.contains("`\($0)`") })

        let example = try String(contentsOfFile: folder + "/shopledger.env.example", encoding: .utf8)
        let named = ReleaseArtifact.variables(in: example)
        #expect(
            named.subtracting(served).subtracting(everyCommand).isEmpty,
            "the env example names variables serve does not read: \(named.subtracting(served).subtracting(everyCommand).sorted())"
        )
        #expect(
            served.subtracting(named).isEmpty,
            "serve settings missing from the env example: \(served.subtracting(named).sorted())")
        // Each setting, set or commented out, is a line of its own that systemd would read as it is.
        let assignment = try NSRegularExpression(pattern: #"^#?SHOPLEDGER_[A-Z0-9_]+=[^ "']*$"#)
        for variable in named {
            let lines = example.split(separator: "\n").map(String.init).filter {
                $0.hasPrefix(variable + "=") || $0.hasPrefix("#" + variable + "=")
            }
            #expect(lines.count == 1, "\(variable): \(lines.count) setting lines")
            for line in lines {
                #expect(
                    assignment.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil,
                    "not a plain NAME=value line: \(line)")
            }
        }

        let readme = try String(contentsOfFile: folder + "/README.md", encoding: .utf8)
        for step in [
            "useradd --system", "/usr/local/bin/shopledger", "/etc/shopledger/shopledger.env", "shopledger migrate",
            "systemctl enable --now shopledger", "journalctl -u shopledger", "/etc/systemd/system/shopledger.service",
        ] {
            #expect(readme.contains(step), "README.md does not say \(step)")
        }
    }

    @Test(
        "systemd-analyze verify finds nothing wrong in the unit, and would; it runs serve as its own user, hardened, stopped by SIGTERM after the grace",
        .enabled(if: ReleaseArtifact.tarball != nil, ReleaseArtifact.disabledReason), .timeLimit(.minutes(2)))
    func systemdUnit() async throws {
        let analyze = try ReleaseArtifact.tool("/usr/bin/systemd-analyze")
        let parent = try FaultResources.newFolder()
        FaultResources.register(folder: parent)
        defer { FaultResources.release(folder: parent) }
        let (folder, _) = try await ReleaseArtifact.unpack(into: parent)
        let unit = try String(contentsOfFile: folder + "/shopledger.service", encoding: .utf8)
        let lines = Set(unit.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        for required in [
            "ExecStart=/usr/local/bin/shopledger serve", "EnvironmentFile=/etc/shopledger/shopledger.env",
            "User=shopledger", "ProtectSystem=strict", "NoNewPrivileges=yes", "Restart=on-failure",
            "RestartPreventExitStatus=64 78",
            "KillSignal=SIGTERM", "PrivateTmp=yes", "ProtectHome=yes", "WantedBy=multi-user.target",
            // serve tells systemd READY=1 once it listens (SystemdNotifyTests): `systemctl start` waits for it.
            "Type=notify", "NotifyAccess=main",
        ] {
            #expect(lines.contains(required), "the unit lacks \(required)")
        }
        let settings = ReleaseArtifact.settings(of: unit)
        let openFiles = try #require(settings["LimitNOFILE"].flatMap { Int($0) }, "LimitNOFILE")
        // The default --max-connections (4096) and the 256 other files the server reserves.
        #expect(openFiles >= 4096 + 256)
        let stopSeconds = try #require(
            settings["TimeoutStopSec"].flatMap { Double($0.hasSuffix("s") ? String($0.dropLast()) : $0) },
            "TimeoutStopSec in seconds")
        // serve's default --shutdown-grace, and what the env example sets it to when it does.
        let example = ReleaseArtifact.settings(
            of: try String(contentsOfFile: folder + "/shopledger.env.example", encoding: .utf8))
        let grace = example["SHOPLEDGER_SHUTDOWN_GRACE"].flatMap { Double($0) } ?? 10
        #expect(stopSeconds > grace + 5, "TimeoutStopSec \(stopSeconds) s leaves the grace (\(grace) s) no margin")

        // Verified where ExecStart names the unpacked binary (verify checks that it exists and runs).
        let installed = unit.replacingOccurrences(
            of: "ExecStart=/usr/local/bin/shopledger ", with: "ExecStart=\(folder)/shopledger ")
        let copy = parent + "/shopledger.service"
        try installed.write(toFile: copy, atomically: true, encoding: .utf8)
        let (status, output) = try await ReleaseArtifact.run([analyze, "verify", copy])
        #expect(status == .exited(0), "\(output)")
        // verify exits 0 on lines it ignores (an unknown key, a bad value): every word it says is a finding.
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "systemd-analyze verify:\n\(output)")

        // The same check on a copy with one bad value: verify must say so, or the check above proves nothing.
        let broken = parent + "/shopledger-broken.service"
        try installed.replacingOccurrences(of: "ProtectSystem=strict", with: "ProtectSystem=strictly").write(
            toFile: broken, atomically: true, encoding: .utf8)
        let (_, complaint) = try await ReleaseArtifact.run([analyze, "verify", broken])
        #expect(complaint.contains("ProtectSystem") || complaint.contains("strictly"), "verify said: \(complaint)")
    }

    @Test(
        "the unpacked binary migrates a PostgreSQL, serves /healthz, /readyz, /metrics and a purchase with the env example's settings, and stops on SIGTERM",
        .enabled(if: ReleaseArtifact.tarball != nil, ReleaseArtifact.disabledReason), .timeLimit(.minutes(3)))
    func migratesAndServes() async throws {
        try await FaultScenario.run("release-artifact") { scenario in
            let (folder, _) = try await ReleaseArtifact.unpack(into: scenario.folder)
            let binary = folder + "/shopledger"
            var environment = ReleaseArtifact.bareEnvironment
            environment["SHOPLEDGER_DATABASE_URL"] = scenario.cluster.url

            let (migrated, migrateOutput) = try await ReleaseArtifact.run(
                [binary, "migrate"], environment: environment)
            #expect(migrated == .exited(0), "\(migrateOutput)")
            #expect(migrateOutput.contains("applied: "), "\(migrateOutput)")
            let (again, againOutput) = try await ReleaseArtifact.run([binary, "migrate"], environment: environment)
            #expect(again == .exited(0) && againOutput.contains("database is up to date"), "\(againOutput)")

            // The env example's settings as systemd would pass them, less the two that name a real Firebase
            // project and Google's URL (dev:<uid> tokens sign in here; the test host need not reach Google);
            // ServerProcess adds the database, the port, development mode.
            var settings = ReleaseArtifact.settings(
                of: try String(contentsOfFile: folder + "/shopledger.env.example", encoding: .utf8))
            #expect(settings["SHOPLEDGER_DATABASE_URL"] != nil && settings["SHOPLEDGER_LOG_LEVEL"] != nil)
            settings["SHOPLEDGER_FIREBASE_PROJECT"] = nil
            settings["SHOPLEDGER_GOOGLE_CERTS_URL"] = nil
            settings["LD_LIBRARY_PATH"] = ""
            let server = try await scenario.startServer(binary: binary, environment: settings)

            let health = try await scenario.http.send(.GET, server.baseURL + "/healthz")
            #expect(health.status == 200 && health.json["status"] as? String == "ok", "\(health.body)")
            let ready = try await scenario.http.send(.GET, server.baseURL + "/readyz")
            #expect(ready.status == 200 && ready.json["status"] as? String == "ready", "\(ready.body)")

            let uid = "release-artifact-user"
            let signUp = try await scenario.http.send(
                .POST, server.baseURL + "/api/v1/me", headers: [("Authorization", "Bearer dev:\(uid)")])
            #expect(signUp.status == 201 || signUp.status == 200, "\(signUp.status) \(signUp.body)")
            let purchase = PurchaseRequest(
                way: .jsonStub, uid: uid, transactionId: "release-artifact-1", product: FaultFixtures.products[0])
            let bought = await purchase.send(scenario.http, baseURL: server.baseURL)
            #expect(bought.status == PurchaseRequest.acknowledged, "purchase: \(bought)")

            let (_, version) = try await ReleaseArtifact.run([binary, "--version"])
            // `shopledger 0.9.0 (commit 0123456789ab)`: the word before the closing parenthesis.
            let words = version.trimmingCharacters(in: .whitespacesAndNewlines).dropLast().split(separator: " ")
            let commit = words.last.map(String.init) ?? ""
            let metrics = try await scenario.http.send(.GET, server.baseURL + "/metrics")
            #expect(metrics.status == 200)
            #expect(
                metrics.body.contains("shopledger_build_info") && metrics.body.contains("commit=\"\(commit)\""),
                "/metrics has no build info for commit \(commit)")

            // systemctl stop: SIGTERM, then exit 0 within the grace.
            server.child.signal(SIGTERM)
            let exit = await server.child.waitForExit(timeout: .seconds(20))
            #expect(exit == .exited(0), "after SIGTERM: \(String(describing: exit))\n\(server.child.logTail())")

            let (reconciled, report) = try await ReleaseArtifact.run(
                [binary, "reconcile"], environment: environment)
            #expect(reconciled == .exited(0), "\(report)")
        }
    }
}
