import Foundation
import Testing

/// Every `SHOPLEDGER_*` variable is parsed like its flag: a value the setting does not take stops
/// `serve` with exit 64 (a usage error, as a bad flag gives) and a message naming the variable, before
/// a private cluster is created or a port bound. From the real binary, since the exit status is the point.
@Suite("SHOPLEDGER_* variables parsed strictly, with the real binary")
struct EnvironmentSettingsTests {
    /// `serve` with `variables`, against a private cluster under `folder` (never created: checks come
    /// first). No flags beside: a flag given wins over its variable, which is then not read.
    static func serve(_ variables: [String: String], folder: String) async throws -> (Spawned.Termination, String) {
        try await Spawned.run(
            [try ServerProcess.binary(), "serve", "--data-dir", folder + "/data"],
            environment: Spawned.environment(variables), timeout: .seconds(60))
    }

    /// (variable, value, what the message must say besides the variable's name).
    static let refused: [(String, String, String)] = [
        ("SHOPLEDGER_PORT", "abc", "must be an integer between 0 and 65535"),
        ("SHOPLEDGER_PORT", "70000", "must be an integer between 0 and 65535"),
        ("SHOPLEDGER_PORT", "80.5", "must be an integer"),
        ("SHOPLEDGER_BODY_LIMIT", "1", "must be an integer between 1024"),
        ("SHOPLEDGER_REQUEST_TIMEOUT", "-1", "must be a number of seconds"),
        ("SHOPLEDGER_REQUEST_TIMEOUT", "0", "must be a number of seconds"),
        ("SHOPLEDGER_REQUEST_TIMEOUT", "10s", "must be a number of seconds"),
        ("SHOPLEDGER_SHUTDOWN_GRACE", "nan", "must be a number of seconds"),
        ("SHOPLEDGER_IDLE_TIMEOUT", "0", "must be a number of seconds between 0.1 and 3600"),
        ("SHOPLEDGER_APP_STORE_SYNC_INTERVAL", "soon", "must be a number of seconds between 1 and 604800"),
        ("SHOPLEDGER_APP_STORE_PRICE_BUDGET", "0.01", "must be a number of seconds between 0.1 and 600"),
        ("SHOPLEDGER_NOTIFICATION_SWEEP_INTERVAL", "inf", "must be a number of seconds"),
        ("SHOPLEDGER_GOOGLE_CERTS_CHECK_INTERVAL", "-5", "must be a number of seconds"),
        ("SHOPLEDGER_VERIFICATION_THREADS", "0", "must be an integer between 1 and 256"),
        ("SHOPLEDGER_MAX_CONNECTIONS", "many", "must be an integer between 1 and 1000000"),
        ("SHOPLEDGER_DEV_AUTH", "maybe", "must be 1, true, yes or on, or 0, false, no or off"),
        ("SHOPLEDGER_STUB_RECEIPTS", "enabled", "must be 1, true, yes or on"),
        ("SHOPLEDGER_ALLOW_DEVELOPMENT_ON_PUBLIC_ADDRESS", "2", "must be 1, true, yes or on"),
        ("SHOPLEDGER_ENVIRONMENTS", "Production,Staging", "must be one of Production, Sandbox"),
        ("SHOPLEDGER_RESTORE_LIMIT", "lots", "must be COUNT/SECONDS"),
        ("SHOPLEDGER_DB_PORT", "0", "must be an integer between 1 and 65535"),
        ("SHOPLEDGER_POOL_SIZE", "500", "must be an integer between 1 and 200"),
        ("SHOPLEDGER_STATEMENT_TIMEOUT", "-1", "must be a number of seconds between 0 and 86400"),
        ("SHOPLEDGER_ROOT_CERTS", "/nonexistent/root.der", "/nonexistent/root.der"),
        ("SHOPLEDGER_LOG_LEVEL", "loud", "must be one of"),
        // Typos, which would otherwise be ignored, and values a quoting mistake padded.
        ("SHOPLEDGER_PROT", "9150", "SHOPLEDGER_PROT is not a setting of shopledger; did you mean SHOPLEDGER_PORT?"),
        (
            "SHOPLEDGER_REQUEST_TIMEOUT_S", "5",
            "SHOPLEDGER_REQUEST_TIMEOUT_S is not a setting of shopledger; did you mean SHOPLEDGER_REQUEST_TIMEOUT?"
        ),
        ("SHOPLEDGER_PORT", " 9150", #"SHOPLEDGER_PORT has spaces or a line break around its value " 9150""#),
        ("SHOPLEDGER_METRICS_TOKEN", "short", "SHOPLEDGER_METRICS_TOKEN: the metrics token must be at least 16 bytes"),
        ("SHOPLEDGER_ADMIN_TOKEN", "short", "SHOPLEDGER_ADMIN_TOKEN: the admin token must be at least 16 bytes"),
        (
            "SHOPLEDGER_STUB_SECRET", "short",
            "SHOPLEDGER_STUB_SECRET: the stub secret is 5 bytes; it must be at least 32"
        ),
        ("SHOPLEDGER_DATABASE_URL", "host=localhost port", #"SHOPLEDGER_DATABASE_URL: missing "=" after "port""#),
    ]

    @Test(
        "a bad SHOPLEDGER_* value stops serve with exit 64, naming the variable, before a cluster is created",
        .timeLimit(.minutes(5)))
    func badValuesRefused() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shopledger-env-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (variable, value, message) in Self.refused {
            let (status, output) = try await Self.serve([variable: value], folder: folder)
            #expect(status == .exited(64), "\(variable)=\(value): \(status): \(output)")
            #expect(output.contains(variable), "\(variable)=\(value): \(output)")
            #expect(output.contains(message), "\(variable)=\(value): \(output)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/data"), "no cluster was created")
    }

    @Test("a bad SHOPLEDGER_APP_STORE_ENVIRONMENT stops serve with exit 64, naming the variable")
    func badAppStoreEnvironment() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shopledger-env-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The environment is checked before the key: the key file need not exist.
        let (status, output) = try await Self.serve(
            [
                "SHOPLEDGER_APP_STORE_KEY_FILE": folder + "/key.p8", "SHOPLEDGER_APP_STORE_KEY_ID": "KEY",
                "SHOPLEDGER_APP_STORE_ISSUER_ID": "issuer", "SHOPLEDGER_APP_STORE_ENVIRONMENT": "staging",
            ], folder: folder)
        #expect(status == .exited(64), "\(status): \(output)")
        #expect(output.contains("SHOPLEDGER_APP_STORE_ENVIRONMENT must be one of production, sandbox"), "\(output)")
    }

    @Test("a SHOPLEDGER_GOOGLE_CERTS that names no file stops serve with exit 64, naming the variable")
    func missingGoogleCertificates() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shopledger-env-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (status, output) = try await Self.serve(
            ["SHOPLEDGER_FIREBASE_PROJECT": "sesac-study", "SHOPLEDGER_GOOGLE_CERTS": folder + "/certs.json"],
            folder: folder)
        #expect(status == .exited(64), "\(status): \(output)")
        #expect(output.contains("SHOPLEDGER_GOOGLE_CERTS names"), "\(output)")
    }

    @Test("switches take 1/0, true/false, yes/no and on/off in any case; a flag's range holds for its variable too")
    func goodValuesAccepted() async throws {
        // An accepted switch gets as far as the loopback check of a public address: proof it was read as on.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shopledger-env-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for value in ["1", "TRUE", "Yes", "on"] {
            let (status, output) = try await Spawned.run(
                [try ServerProcess.binary(), "serve", "--data-dir", folder + "/data", "--host", "0.0.0.0"],
                environment: Spawned.environment(["SHOPLEDGER_DEV_AUTH": value]), timeout: .seconds(60))
            #expect(status == .exited(64), "SHOPLEDGER_DEV_AUTH=\(value): \(output)")
            #expect(output.contains("development tokens (--dev-auth)"), "SHOPLEDGER_DEV_AUTH=\(value): \(output)")
        }
        // Off: then nobody can sign in, which is what stops the start (no loopback complaint).
        let (status, output) = try await Spawned.run(
            [try ServerProcess.binary(), "serve", "--data-dir", folder + "/data", "--host", "0.0.0.0"],
            environment: Spawned.environment(["SHOPLEDGER_DEV_AUTH": "off"]), timeout: .seconds(60))
        #expect(status != .exited(0) && !output.contains("development tokens (--dev-auth)"), "\(output)")
        #expect(!output.contains("SHOPLEDGER_DEV_AUTH"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/data"), "no cluster was created")
    }

    @Test("a SHOPLEDGER_SHUTDOWN_GRACE that does not fit in SHOPLEDGER_STOP_TIMEOUT stops serve with exit 64")
    func graceLongerThanStopTimeout() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shopledger-env-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (status, output) = try await Self.serve(
            ["SHOPLEDGER_SHUTDOWN_GRACE": "45", "SHOPLEDGER_STOP_TIMEOUT": "30"], folder: folder)
        #expect(status == .exited(64), "\(status): \(output)")
        #expect(
            output.contains(
                "SHOPLEDGER_SHUTDOWN_GRACE is 45 s, but SHOPLEDGER_STOP_TIMEOUT says the service manager kills the server 30 s after SIGTERM"
            ), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/data"), "no cluster was created")
    }

    /// A certificate URL that does not answer is an unavailable service (69), not a usage error (64): a
    /// supervisor or an operator reading the status retries rather than looks for a typo.
    @Test("Google's certificate URL not answering at start stops serve with exit 69, naming the variable")
    func googleCertificatesUnavailable() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shopledger-env-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (status, output) = try await Self.serve(
            [
                "SHOPLEDGER_FIREBASE_PROJECT": "sesac-study",
                "SHOPLEDGER_GOOGLE_CERTS_URL": "http://127.0.0.1:1/certificates",
            ], folder: folder)
        #expect(status == .exited(69), "\(status): \(output)")
        #expect(output.contains("Error: SHOPLEDGER_GOOGLE_CERTS_URL: "), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/data"), "no cluster was created")
    }
}
