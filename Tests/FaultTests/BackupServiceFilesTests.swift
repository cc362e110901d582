import Foundation
import Testing

/// deploy/pgbackrest/ as an operator installs it: the units verify and say what they run, and the
/// secrets backup writes a copy of the folder that only the private key reads back. (The shipped
/// pgbackrest.conf itself runs the whole drill in BackupRestoreTests.)
@Suite("deploy/pgbackrest: the backup units and the secrets backup")
struct BackupServiceFilesTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/pgbackrest").path
    static let units = [
        "shopledger-backup@.service", "shopledger-backup-full.timer", "shopledger-backup-diff.timer",
        "shopledger-secrets-backup.service", "shopledger-secrets-backup.timer",
    ]

    static func tool(_ path: String, package: String) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FaultTestError(
                "\(path) is missing: apt-get install -y \(package) (scripts/install-deps.sh --for test)")
        }
        return path
    }

    /// The unit's `Key=value` lines, in order.
    static func lines(_ unit: String, _ key: String) throws -> [String] {
        try String(contentsOfFile: folder + "/" + unit, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    @Test(
        "the backup runs as postgres: check, the timer's type of backup, then shopledger backups record; weekly full, daily diff"
    )
    func backupUnitSteps() throws {
        #expect(try Self.lines("shopledger-backup@.service", "User") == ["postgres"])
        #expect(try Self.lines("shopledger-backup@.service", "Type") == ["oneshot"])
        #expect(
            try Self.lines("shopledger-backup@.service", "ExecStart") == [
                "/usr/bin/pgbackrest --stanza=shopledger check",
                "/usr/bin/pgbackrest --stanza=shopledger backup --type=%i",
                "/usr/local/bin/shopledger backups record --stanza shopledger",
            ])
        #expect(try Self.lines("shopledger-backup-full.timer", "Unit") == ["shopledger-backup@full.service"])
        #expect(try Self.lines("shopledger-backup-full.timer", "OnCalendar") == ["Sun *-*-* 03:30:00"])
        #expect(try Self.lines("shopledger-backup-diff.timer", "Unit") == ["shopledger-backup@diff.service"])
        #expect(try Self.lines("shopledger-backup-diff.timer", "OnCalendar") == ["Mon..Sat *-*-* 03:30:00"])
        #expect(
            try Self.lines("shopledger-secrets-backup.service", "ExecStart") == [
                "/usr/local/sbin/shopledger-secrets-backup"
            ])
    }

    @Test("systemd-analyze verify finds nothing wrong in the five units (the two backup instances too), and would")
    func unitsVerify() async throws {
        let analyze = try Self.tool("/usr/bin/systemd-analyze", package: "systemd")
        let copy = try FaultResources.newFolder()
        FaultResources.register(folder: copy)
        defer { FaultResources.release(folder: copy) }
        // Installed where ExecStart names what exists here (verify checks that the programs exist).
        for unit in Self.units {
            let text = try String(contentsOfFile: Self.folder + "/" + unit, encoding: .utf8)
                .replacingOccurrences(of: "/usr/local/bin/shopledger ", with: try ServerProcess.binary() + " ")
                .replacingOccurrences(
                    of: "/usr/local/sbin/shopledger-secrets-backup", with: Self.folder + "/shopledger-secrets-backup"
                )
                .replacingOccurrences(of: "/usr/bin/pgbackrest ", with: try BackupRepository.binary() + " ")
            try text.write(toFile: copy + "/" + unit, atomically: true, encoding: .utf8)
        }
        let checked =
            Self.units.map { copy + "/" + $0 } + [
                copy + "/shopledger-backup@full.service", copy + "/shopledger-backup@diff.service",
            ]
        let (status, output) = try await Spawned.run([analyze, "verify"] + checked)
        #expect(status == .exited(0), "\(output)")
        // verify exits 0 on lines it ignores: every word it says is a finding.
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "systemd-analyze verify:\n\(output)")

        let unit = copy + "/shopledger-backup@.service"
        try String(contentsOfFile: unit, encoding: .utf8).replacingOccurrences(
            of: "ProtectSystem=full", with: "ProtectSystem=fully"
        ).write(toFile: unit, atomically: true, encoding: .utf8)
        let (_, complaint) = try await Spawned.run([analyze, "verify", copy + "/shopledger-backup@full.service"])
        #expect(complaint.contains("fully"), "verify said: \(complaint)")
    }

    @Test(
        "the secrets backup: an encrypted copy that holds no secret in the clear, read back whole by the private key; the newest kept"
    )
    func secretsBackupRoundTrip() async throws {
        let gpg = try Self.tool("/usr/bin/gpg", package: "gnupg")
        let work = try FaultResources.newFolder()
        FaultResources.register(folder: work)
        defer { FaultResources.release(folder: work) }
        // The operator's key pair, made here; the servers get the public half only.
        let home = work + "/operator-gnupg"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: home)
        let generated = try await Spawned.run([
            gpg, "--homedir", home, "--batch", "--passphrase", "", "--quick-gen-key",
            "ShopLedger operator <ops@example.com>",
            "default", "default", "never",
        ])
        #expect(generated.status == .exited(0), "\(generated.output)")
        let exported = try await Spawned.run([
            gpg, "--homedir", home, "--batch", "--armor", "--export", "ops@example.com",
        ])
        try #require(exported.status == .exited(0) && exported.output.contains("BEGIN PGP PUBLIC KEY BLOCK"))
        let recipient = work + "/recipient.asc"
        try exported.output.write(toFile: recipient, atomically: true, encoding: .utf8)

        // A folder like /etc/shopledger: the settings and a token, private to their owner.
        let source = work + "/etc/shopledger"
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let secret = "SHOPLEDGER_DATABASE_URL=postgresql://shopledger:a-database-password-7f3e@db/shopledger\n"
        try secret.write(toFile: source + "/shopledger.env", atomically: true, encoding: .utf8)
        try "an-admin-token-of-32-characters-at-least".write(
            toFile: source + "/admin-token", atomically: true, encoding: .utf8)
        for file in ["shopledger.env", "admin-token"] {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: source + "/" + file)
        }
        let destination = work + "/copies"
        var environment = Spawned.environment([:])
        environment["SECRETS_BACKUP_SOURCE"] = source
        environment["SECRETS_BACKUP_DEST"] = destination
        environment["SECRETS_BACKUP_RECIPIENT"] = recipient
        environment["SECRETS_BACKUP_KEEP"] = "2"
        // Three runs, a second apart (the names carry the second): the oldest goes.
        var written: [String] = []
        for _ in 0..<3 {
            let run = try await Spawned.run([Self.folder + "/shopledger-secrets-backup"], environment: environment)
            #expect(run.status == .exited(0), "\(run.output)")
            written += run.output.split(separator: "\n").compactMap { line in
                line.hasPrefix("shopledger-secrets-backup: wrote ")
                    ? String(line.split(separator: " ").last ?? "") : nil
            }
            try await Task.sleep(for: .milliseconds(1100))
        }
        #expect(written.count == 3)
        let kept = try FileManager.default.contentsOfDirectory(atPath: destination).sorted()
        #expect(kept == written.suffix(2).map { URL(fileURLWithPath: $0).lastPathComponent }.sorted(), "\(kept)")
        let newest = try #require(written.last)
        let attributes = try FileManager.default.attributesOfItem(atPath: newest)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: newest))
        #expect(
            bytes.range(of: Data("a-database-password-7f3e".utf8)) == nil, "the copy holds the password in the clear")

        // Read back with the private key, as the restore line in the script says.
        let restored = work + "/restored"
        try FileManager.default.createDirectory(atPath: restored, withIntermediateDirectories: true)
        let decrypted = try await Spawned.run([
            "/bin/sh", "-c",
            "\(gpg) --homedir '\(home)' --batch --quiet --decrypt '\(newest)' | tar -C '\(restored)' -xpf -",
        ])
        #expect(decrypted.status == .exited(0), "\(decrypted.output)")
        #expect(try String(contentsOfFile: restored + "/shopledger/shopledger.env", encoding: .utf8) == secret)
        let mode = try FileManager.default.attributesOfItem(atPath: restored + "/shopledger/admin-token")[
            .posixPermissions]
        #expect((mode as? Int) == 0o600, "the file's mode came back")

        // Without the recipient's key it refuses, rather than write a copy nobody can read or one in the clear.
        environment["SECRETS_BACKUP_RECIPIENT"] = work + "/missing.asc"
        let refused = try await Spawned.run([Self.folder + "/shopledger-secrets-backup"], environment: environment)
        #expect(refused.status != .exited(0) && refused.output.contains("no public key"), "\(refused.output)")
    }

    @Test("shopledger backups record fails with pgBackRest's own error when pgbackrest info does, before the database")
    func recordSaysWhatPgBackRestSaid() async throws {
        let missing = "/nonexistent/shopledger-test/pgbackrest.conf"
        let (status, output) = try await Spawned.run([
            try ServerProcess.binary(), "backups", "record", "--pgbackrest", try BackupRepository.binary(),
            "--pgbackrest-config", missing, "--database-url", "postgresql://127.0.0.1:1/nowhere",
        ])
        #expect(status != .exited(0), "\(output)")
        #expect(output.contains("info failed") && output.contains(missing), "\(output)")
    }
}
