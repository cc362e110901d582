import Foundation
import NIOCore
import NIOHTTP1

/// Debian's nginx (installed by scripts/install-deps.sh `--for test`) terminating TLS in front of
/// several `shopledger serve` processes, with the directives of `deploy/nginx/shopledger.conf`: the
/// test runs that file, with only its ports, certificate and log paths replaced, wrapped in a main
/// configuration of its own (nothing under /etc/nginx is read). nginx runs in the foreground as one
/// process (`master_process off`), so that SIGKILL leaves no worker behind.
enum TLSProxy {
    /// `nginx` on PATH or in /usr/sbin (where Debian puts it, often not on a user's PATH).
    static func binary() throws -> String {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        guard
            let found = (folders + ["/usr/sbin", "/usr/local/sbin"]).map({ $0 + "/nginx" }).first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw FaultTestError(
                "nginx was not found; scripts/install-deps.sh --for test installs it (apt-get install nginx)")
        }
        return found
    }

    /// The deployment's configuration, as committed.
    static var deployedConfiguration: String {
        get throws {
            let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                    "deploy/nginx/shopledger.conf")
            return try String(contentsOf: file, encoding: .utf8)
        }
    }

    /// A self-signed ECDSA certificate for `::1`, `127.0.0.1` and `localhost`, valid for a day.
    static func makeCertificate(in folder: String) async throws -> (certificate: String, key: String) {
        let certificate = folder + "/tls-cert.pem"
        let key = folder + "/tls-key.pem"
        let (status, output) = try await Spawned.run([
            "/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:::1,IP:127.0.0.1,DNS:localhost",
        ])
        guard status == .exited(0) else { throw FaultTestError("openssl req: \(status)\n\(output)") }
        return (certificate, key)
    }

    /// The per-address limits as shipped (`limit_req` 10 r/s, burst 20; `limit_conn` 20), and as
    /// lifted for a load from one address (the test client's: every request comes from `::1`).
    enum PerAddressLimits: Sendable {
        case asShipped
        case lifted
    }

    /// `deploy/nginx/shopledger.conf` with its upstream servers replaced by `backends` (ports on
    /// 127.0.0.1, with the parameters the file gives its first server), its listen lines by `[::1]:port`
    /// (TLS) and `[::1]:httpPort` (the redirect to HTTPS), its certificate, log and ACME folder paths by
    /// the test's, and with `.lifted`, its per-address limits raised out of a load's way. Throws when a
    /// line to replace is not in the file (the file changed shape: this must change with it).
    static func siteConfiguration(
        _ deployed: String, port: Int, httpPort: Int, backends: [Int], certificate: String, key: String,
        folder: String, limits: PerAddressLimits = .asShipped
    ) throws -> String {
        var lines: [String] = []
        var serversWritten = false
        var replaced: Set<String> = []
        for line in deployed.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("server 127.0.0.1:"), trimmed.hasSuffix(";") {
                // `server 127.0.0.1:8081 max_fails=1 fail_timeout=5s;`: the parameters stay.
                let parameters = trimmed.dropFirst("server ".count).split(separator: " ").dropFirst()
                    .joined(separator: " ")
                if !serversWritten {
                    lines += backends.map { "    server 127.0.0.1:\($0) \(parameters)" }
                    serversWritten = true
                }
                replaced.insert("server")
            } else if trimmed == "listen 443 ssl;" {
                lines.append("    listen [::1]:\(port) ssl;")
                replaced.insert("listen")
            } else if trimmed == "listen 80;" {
                lines.append("    listen [::1]:\(httpPort);")
                replaced.insert("listen 80")
            } else if trimmed == "listen [::]:443 ssl;" || trimmed == "listen [::]:80;" {
                continue
            } else {
                lines.append(line)
            }
        }
        var text = lines.joined(separator: "\n")
        var replacements = [
            ("/etc/ssl/shopledger/fullchain.pem", certificate), ("/etc/ssl/shopledger/privkey.pem", key),
            ("/var/log/nginx/", folder + "/"), ("root /var/www/html;", "root \(folder)/acme;"),
        ]
        if limits == .lifted {
            replacements += [
                ("rate=10r/s;", "rate=100000r/s;"),
                ("limit_conn shopledger_connections 20;", "limit_conn shopledger_connections 10000;"),
            ]
        }
        for (placeholder, value) in replacements {
            guard text.contains(placeholder) else {
                throw FaultTestError("deploy/nginx/shopledger.conf: no \(placeholder)")
            }
            text = text.replacingOccurrences(of: placeholder, with: value)
        }
        guard replaced == ["server", "listen", "listen 80"] else {
            throw FaultTestError(
                "deploy/nginx/shopledger.conf: expected upstream server, listen 443 and listen 80 lines")
        }
        return text
    }

    /// Starts nginx on `[::1]:port` (TLS) and `[::1]:httpPort` (plain HTTP) in front of `backends`, its
    /// files in `folder/nginx` (its error log `error.log`, ACME's webroot `acme`), and waits until a request
    /// through it (over TLS, with `https`) reaches a ready server.
    static func start(
        port: Int, httpPort: Int, backends: [Int], certificate: String, key: String, folder: String,
        limits: PerAddressLimits, https: FaultHTTP
    ) async throws -> LoadBalancer {
        let home = folder + "/nginx"
        for sub in ["", "/body", "/proxy", "/fastcgi", "/uwsgi", "/scgi", "/acme"] {
            try FileManager.default.createDirectory(atPath: home + sub, withIntermediateDirectories: true)
        }
        let site = try siteConfiguration(
            try deployedConfiguration, port: port, httpPort: httpPort, backends: backends, certificate: certificate,
            key: key, folder: home, limits: limits)
        try site.write(toFile: home + "/shopledger.conf", atomically: true, encoding: .utf8)
        let main = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(home)/nginx.pid;
            error_log \(home)/error.log notice;
            events { worker_connections 1024; }
            http {
                client_body_temp_path \(home)/body;
                proxy_temp_path \(home)/proxy;
                fastcgi_temp_path \(home)/fastcgi;
                uwsgi_temp_path \(home)/uwsgi;
                scgi_temp_path \(home)/scgi;
                include \(home)/shopledger.conf;
            }

            """
        try main.write(toFile: home + "/nginx.conf", atomically: true, encoding: .utf8)
        let child = try Spawned.start(
            [try binary(), "-p", home, "-e", home + "/error.log", "-c", home + "/nginx.conf"],
            environment: Spawned.environment([:]), logPath: folder + "/nginx.log")
        let proxy = LoadBalancer(child: child, port: port, baseURL: "https://[::1]:\(port)")
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let exit = child.exit {
                proxy.kill()
                let errors = (try? String(contentsOfFile: home + "/error.log", encoding: .utf8)) ?? ""
                throw FaultTestError("nginx ended (\(exit)) before it was ready:\n\(child.logTail())\n\(errors)")
            }
            if let answer = try? await https.send(.GET, proxy.baseURL + "/readyz", timeout: .seconds(2)),
                answer.status == 200
            {
                return proxy
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        proxy.kill()
        throw FaultTestError("nginx did not pass a request within 20 s:\n\(child.logTail())")
    }
}
