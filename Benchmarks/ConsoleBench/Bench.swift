import AsyncHTTPClient
import BenchSupport
import CivilDates
import Foundation
import Ledger
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import Receipts
import Reports
import Seeding

/// The operators' console over a month of history (issue 42): seeds 20,000 purchases over October 2026
/// (`shopledger seed`'s seeder, through COPY) into a durable private cluster, starts the release
/// `shopledger serve --console-port`, gives one customer 200 purchases through the shop's API (the
/// catalog grown to 200 paid items first: each item is bought once), signs an operator in through the
/// console's sign-in form, and times the customer's page (`/customers/<uid>`: what they own and their
/// whole timeline) over a keep-alive connection: a first request, then `--runs` more (median, p95,
/// max). Then the same for a search by transaction id (its 303 to the customer), and for the month's
/// and its last day's report pages (`/money/report?...`, Asia/Seoul) when this build serves `/money`.
///
///     ConsoleBench [--server PATH] [--runs N] [--purchases N]
///
/// Targets (issue 42): the customer page under 200 ms, a cached report page under 1 s.
@main
struct Bench {
    static let stubSecret = "console-bench-stub-secret-of-32-bytes-at-least"
    static let adminToken = "console-bench-admin-token-0123456789"
    static let uid = "console-bench-customer"

    static func main() async throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        func option(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            defer { arguments.removeSubrange(index...(index + 1)) }
            return arguments[index + 1]
        }
        var server = option("--server") ?? ".build/release/shopledger"
        if !server.hasPrefix("/") { server = FileManager.default.currentDirectoryPath + "/" + server }
        let runs = option("--runs").flatMap(Int.init) ?? 30
        let purchases = option("--purchases").flatMap(Int.init) ?? 20_000
        var logger = Logger(label: "bench")
        logger.logLevel = .warning

        let folder = "/tmp/shopledger-console-bench-\(ProcessInfo.processInfo.processIdentifier)"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cluster = try LocalPostgres(
            options: .init(
                dataDirectory: folder + "/data", port: 55_800 + Int(ProcessInfo.processInfo.processIdentifier % 150),
                durable: true),
            logger: logger)
        let running = try await cluster.start()
        let admin = PostgresClient(
            configuration: .init(
                connection: .init(url: running.url(database: "postgres")), minimumConnections: 0, maximumConnections: 1),
            logger: logger)
        try await admin.query("CREATE DATABASE bench")
        await admin.shutdown()
        let databaseURL = running.url(database: "bench")
        let client = PostgresClient(
            configuration: .init(connection: .init(url: databaseURL), minimumConnections: 1, maximumConnections: 4),
            logger: logger)
        let clock = ContinuousClock()
        _ = try await LedgerSchema.migrator(logger: logger).migrate(client)
        let lastDay = CalendarDate(year: 2026, month: 10, day: 31)!
        let seeder = LedgerSeeder(client: client, invalidating: .reportDays, logger: logger)
        let began = clock.now
        say("seeding \(purchases) purchases over October 2026")
        let seeded = try await seeder.seed(SeedConfiguration(purchases: purchases, days: 31, lastDay: lastDay))
        try await seeder.vacuum()
        say(
            "seed: \(seeded.purchases) purchases, \(seeded.refunds) refunds, \(seeded.users) users over "
                + "\(seeded.firstDay) to \(seeded.lastDay) in \(ms(clock.now - began)) ms")
        await client.shutdown()

        // The server, in development mode (stub receipts), with the console on a port of its own.
        let port = 56_100 + Int(ProcessInfo.processInfo.processIdentifier % 150)
        let consolePort = port + 200
        let tokenFile = folder + "/admin-token"
        try write(adminToken, to: tokenFile)
        let passwordFile = folder + "/operator-password"
        try write("console-bench-operator-password", to: passwordFile)
        let added = try run([
            server, "operators", "add", "bench", "--role", "admin", "--password-file", passwordFile, "--database-url",
            databaseURL,
        ])
        guard added == 0 else { throw BenchError("operators add exited \(added)") }
        var environment = ProcessInfo.processInfo.environment
        environment["SHOPLEDGER_STUB_SECRET"] = stubSecret
        environment["SHOPLEDGER_LOG_LEVEL"] = "warning"
        let pid = try ChildProcess.spawn(
            [
                server, "serve", "--port", String(port), "--console-port", String(consolePort), "--database-url",
                databaseURL, "--dev-auth", "--stub-receipts", "--admin-token-file", tokenFile,
            ], environment: environment, workingDirectory: "/tmp", output: folder + "/server.log", append: false)
        defer {
            kill(pid, SIGTERM)
            _ = try? ChildProcess.waitForExit(pid, executable: server)
        }
        let http = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(
                redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5), read: .seconds(60))))
        do {
            try await exercise(
                http, shop: "http://127.0.0.1:\(port)", console: "http://127.0.0.1:\(consolePort)", runs: runs,
                folder: folder, pid: pid)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
        try await cluster.stop()
    }

    /// The customer's 200 purchases, the operator's session, the measurements.
    static func exercise(
        _ http: HTTPClient, shop: String, console: String, runs: Int, folder: String, pid: pid_t
    ) async throws {
        let clock = ContinuousClock()
        var ready = false
        for _ in 0..<600 where !ready {
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == 0 else {
                throw BenchError("the server exited at start; see \(folder)/server.log")
            }
            ready = (try? await send(http, .GET, shop + "/readyz"))?.status == .ok
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        guard ready else { throw BenchError("the server was not ready in 60 s; see \(folder)/server.log") }

        // 200 paid items (11 seeded, 189 added), then one purchase of each by the customer, over the month.
        let began = clock.now
        let registered = try await send(
            http, .POST, shop + "/api/v1/me", headers: ["Authorization": "Bearer dev:\(uid)"])
        guard registered.status == .created else { throw BenchError("register: \(registered.status)") }
        var products =
            (1...4).map { "com.memolease.sesac1.sprout\($0)" }
            + (1...7).map {
                "com.memolease.sesac1.background\($0)"
            }
        for number in 0..<189 {
            let (kind, index) = number < 95 ? ("face", 5 + number) : ("background", 8 + number - 95)
            let productId = "com.memolease.sesac1.bench\(kind)\(index)"
            let body: [String: Any] = [
                "kind": kind, "index": index, "productId": productId, "name": "벤치 \(kind) \(index)",
                "nameEn": "Bench \(kind) \(index)", "price": ["amountMilli": 1_100_000, "currency": "KRW"],
                "reason": "ConsoleBench: a customer with 200 purchases",
            ]
            let answer = try await send(
                http, .POST, shop + "/api/v1/admin/catalog", headers: ["Authorization": "Bearer \(adminToken)"],
                json: body)
            guard answer.status == .created else { throw BenchError("catalog add \(productId): \(answer.status)") }
            products.append(productId)
        }
        let monthStart = Int64(1_759_276_800_000)  // 2026-10-01T00:00:00Z
        for (number, product) in products.enumerated() {
            let receipt = StubReceipt(
                bundleId: "com.memolease.sesac1", creationDateMs: monthStart + Int64(number) * 13_000_000 + 60_000,
                inApp: [
                    .init(
                        productId: product, transactionId: "console-bench-\(number)",
                        purchaseDateMs: monthStart + Int64(number) * 13_000_000, priceMilli: 1_100_000, currency: "KRW")
                ]
            ).text(signedWith: stubSecret)
            let answer = try await send(
                http, .POST, shop + "/api/v1/purchases", headers: ["Authorization": "Bearer dev:\(uid)"],
                json: ["receipt": receipt, "productId": product])
            guard answer.status == .ok else { throw BenchError("purchase \(product): \(answer.status) \(answer.body)") }
        }
        say("the customer: \(products.count) purchases of \(products.count) paid items in \(ms(clock.now - began)) ms")

        // Sign in as an operator does: the form's token (a cookie and a hidden field), then the session.
        let form = try await send(http, .GET, console + "/login")
        guard let formCookie = cookie("shopledger_console_login", in: form.headers),
            let token = hiddenValue("form_token", in: form.body)
        else { throw BenchError("no sign-in form token") }
        let signedIn = try await send(
            http, .POST, console + "/login",
            headers: [
                "Cookie": "shopledger_console_login=\(formCookie)",
                "Content-Type": "application/x-www-form-urlencoded",
            ],
            body: "form_token=\(token)&name=bench&password=console-bench-operator-password&next=")
        guard signedIn.status == .seeOther, let session = cookie("shopledger_console", in: signedIn.headers) else {
            throw BenchError("sign-in: \(signedIn.status)")
        }
        let sessionHeader = ["Cookie": "shopledger_console=\(session)"]

        let customer = try await measure(
            "customer page /customers/\(uid)", http, console + "/customers/\(uid)", headers: sessionHeader, runs: runs,
            expect: .ok, target: .milliseconds(200))
        let rows = customer.components(separatedBy: "<tr>").count - 2
        say("  the page: \(customer.utf8.count) bytes, \(rows) timeline rows")
        _ = try await measure(
            "search by transaction id /customers?q=console-bench-199 (303 to the customer)", http,
            console + "/customers?q=console-bench-199", headers: sessionHeader, runs: runs, expect: .seeOther,
            target: nil)

        // The report pages, when this build serves /money: the month's and its last day's, the first request
        // making the report, the others served from the console's report cache (60 s).
        let money = try await send(http, .GET, console + "/money", headers: sessionHeader)
        guard money.status == .ok else {
            say("report pages: not measured (this build's console answers /money with \(money.status.code))")
            return
        }
        for query in ["kind=month&month=2026-10&tz=Asia/Seoul", "kind=daily&date=2026-10-31&tz=Asia/Seoul"] {
            let page = try await measure(
                "report page /money/report?\(query) (first: made; then cached)", http,
                console + "/money/report?" + query, headers: sessionHeader, runs: max(5, runs / 3), expect: .ok,
                target: .seconds(1))
            say("  the page: \(page.utf8.count) bytes")
        }
    }

    /// `runs` GETs after a first one; prints the first, the median, p95 and max, and returns the body.
    static func measure(
        _ label: String, _ http: HTTPClient, _ url: String, headers: [String: String], runs: Int,
        expect: HTTPResponseStatus, target: Duration?
    ) async throws -> String {
        let clock = ContinuousClock()
        var began = clock.now
        let first = try await send(http, .GET, url, headers: headers)
        let firstTime = clock.now - began
        guard first.status == expect else { throw BenchError("\(label): \(first.status), not \(expect)") }
        var times: [Duration] = []
        for _ in 0..<runs {
            began = clock.now
            let answer = try await send(http, .GET, url, headers: headers)
            times.append(clock.now - began)
            guard answer.status == expect else { throw BenchError("\(label): \(answer.status), not \(expect)") }
        }
        times.sort()
        let median = percentile(times, 0.5)!
        say(
            "\(label): first \(ms(firstTime)) ms; of \(runs) more: median \(ms(median)) ms, p95 "
                + "\(ms(percentile(times, 0.95)!)) ms, max \(ms(times.last!)) ms"
                + (target.map { "; target < \(ms($0)) ms: \(median < $0 ? "met" : "NOT met")" } ?? ""))
        return first.body
    }

    struct Answer {
        let status: HTTPResponseStatus
        let headers: HTTPHeaders
        let body: String
    }

    static func send(
        _ http: HTTPClient, _ method: HTTPMethod, _ url: String, headers: [String: String] = [:],
        json: [String: Any]? = nil, body: String? = nil
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: Array(try JSONSerialization.data(withJSONObject: json))))
        } else if let body {
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await http.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return Answer(status: response.status, headers: response.headers, body: String(buffer: bytes))
    }

    static func cookie(_ name: String, in headers: HTTPHeaders) -> String? {
        for value in headers["Set-Cookie"] {
            let pair = value.split(separator: ";").first ?? ""
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == name { return String(parts[1]) }
        }
        return nil
    }

    static func hiddenValue(_ name: String, in html: String) -> String? {
        guard let field = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        return html[field.upperBound...].split(separator: "\"").first.map(String.init)
    }

    static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    static func run(_ command: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        var environment = ProcessInfo.processInfo.environment
        environment["SHOPLEDGER_LOG_LEVEL"] = "error"
        process.environment = environment
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func ms(_ duration: Duration) -> String {
        String(
            format: "%.1f",
            (Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) * 1000)
    }
}
