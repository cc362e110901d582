import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PostgresNIO

/// The peer issue 30 measures `GET /v1/user/shop/myinfo` against: a minimal Hummingbird 2 +
/// postgres-nio server that runs our server's exact statement as a prepared statement and answers the
/// same JSON bytes. It accepts only development tokens (`idtoken: dev:<uid>`, as ours under
/// `--dev-auth`), logs no requests and keeps no metrics: what it costs per request is the floor the
/// framework and the driver set. LoadBench starts it (`--peer`); see docs/benchmarks.md.
///
/// Usage: myinfo-peer --database-url URL [--port P] [--host H] [--pool-size N] [--statement-file PATH]
@main
struct MyinfoPeer {
    static func main() async throws {
        let options: PeerOptions
        do {
            options = try PeerOptions(CommandLine.arguments.dropFirst())
        } catch {
            FileHandle.standardError.write(Data("myinfo-peer: \(error)\n\(PeerOptions.usage)\n".utf8))
            exit(2)
        }
        if let file = options.statementFile {
            guard let data = FileManager.default.contents(atPath: file), !data.isEmpty else {
                FileHandle.standardError.write(Data("myinfo-peer: cannot read the statement in \(file)\n".utf8))
                exit(2)
            }
            MyinfoStatement.text = String(decoding: data, as: UTF8.self)
        }
        var logger = Logger(label: "myinfo-peer")
        logger.logLevel = .notice
        var configuration = options.database
        configuration.options.minimumConnections = min(2, options.poolSize)
        configuration.options.maximumConnections = options.poolSize
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)

        let router = Router()
        router.get("v1/user/shop/myinfo") { [logger] request, _ -> Response in
            try await myinfo(request, client: client, logger: logger)
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname(options.host, port: options.port)),
            services: [client], logger: logger)
        try await app.runService()
    }

    /// 200 with the user document; 401 without a usable development token; 406 for an unregistered
    /// user; 500 when the read fails. The statuses and bodies of ours (`SeSACReply`).
    static func myinfo(_ request: Request, client: PostgresClient, logger: Logger) async throws -> Response {
        let uid: String
        switch DevelopmentToken.uid(in: request.headers) {
        case .success(let found): uid = found
        case .failure(let refusal): return reply(.unauthorized, "Firebase token error: \(refusal.code)")
        }
        do {
            let rows = try await client.execute(MyinfoStatement(uid: uid), logger: logger)
            var found: MyinfoStatement.Row?
            // Read to the end, so the connection goes back to the pool ready for the next statement.
            for try await row in rows where found == nil { found = row }
            guard let found else { return reply(.init(code: 406), "unregistered user") }
            return Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: UserDocumentBody.write(uid: uid, row: found)))
        } catch {
            logger.error("myinfo failed", metadata: ["error": "\(String(reflecting: error))"])
            return reply(.internalServerError, "server error: database_error")
        }
    }

    /// `{"message": ...}`, as ours; the messages are fixed ASCII without characters JSON escapes.
    static func reply(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: #"{"message":"\#(message)"}"#)))
    }
}

/// Ours under `--dev-auth` (`AuthHeaders.sesacToken`, `DevelopmentModeVerifier`): one `idtoken` header,
/// spaces and tabs around it ignored, carrying `dev:<uid>` with a uid of 1–128 characters of
/// `A–Z a–z 0–9 _ -`.
enum DevelopmentToken {
    struct Refusal: Error {
        let code: String
    }

    static let header = HTTPField.Name("idtoken")!

    static func uid(in headers: HTTPFields) -> Result<String, Refusal> {
        let values = headers[values: header]
        guard let value = values.first else { return .failure(Refusal(code: "missing_token")) }
        guard values.count == 1 else { return .failure(Refusal(code: "malformed_token")) }
        let token = value.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        let trimmed = token.reversed().drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }.reversed()
        guard !trimmed.isEmpty else { return .failure(Refusal(code: "missing_token")) }
        let prefix = Array("dev:".utf8)
        guard trimmed.starts(with: prefix) else { return .failure(Refusal(code: "malformed_token")) }
        let uid = trimmed.dropFirst(prefix.count)
        guard (1...128).contains(uid.count), uid.allSatisfy(isUIDByte) else {
            return .failure(Refusal(code: "invalid_subject"))
        }
        return .success(String(decoding: uid, as: UTF8.self))
    }

    private static func isUIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}

struct PeerOptions {
    var host = "127.0.0.1"
    var port = 8090
    var poolSize = 16
    var database: PostgresClient.Configuration
    var statementFile: String?

    struct Invalid: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    init(_ arguments: ArraySlice<String>) throws {
        var arguments = arguments
        var url: String?
        while let flag = arguments.popFirst() {
            if flag == "--help" || flag == "-h" {
                print(Self.usage)
                exit(0)
            }
            guard let value = arguments.popFirst() else { throw Invalid("\(flag) needs a value") }
            switch flag {
            case "--host": host = value
            case "--port":
                guard let number = Int(value), (1...65535).contains(number) else {
                    throw Invalid("--port takes 1…65535")
                }
                port = number
            case "--pool-size":
                guard let number = Int(value), (1...1000).contains(number) else {
                    throw Invalid("--pool-size takes 1…1000 connections")
                }
                poolSize = number
            case "--database-url": url = value
            case "--statement-file": statementFile = value
            default: throw Invalid("unknown option \(flag)")
            }
        }
        guard let url else { throw Invalid("--database-url is required") }
        database = try Self.configuration(url: url)
    }

    /// `postgresql://[user@][host][:port]/database[?host=…&port=…&user=…]`, the libpq URI forms our
    /// `--database-url` takes; a `host` that starts with `/` is the directory of the server's unix socket
    /// (LoadBench's private cluster: `postgresql:///bench?host=/…&port=…&user=…`). No password, no TLS:
    /// the peer runs beside its database.
    static func configuration(url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
            ["postgresql", "postgres"].contains(components.scheme ?? "")
        else { throw Invalid("--database-url is not a postgresql:// URL: \(url)") }
        let query = Dictionary(
            (components.queryItems ?? []).compactMap { item in item.value.map { (item.name, $0) } },
            uniquingKeysWith: { _, last in last })
        let host = query["host"] ?? components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "/var/run/postgresql"
        guard let port = query["port"].map(Int.init) ?? components.port ?? 5432 else {
            throw Invalid("--database-url: the port is not a number")
        }
        let user = query["user"] ?? components.user ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let database = path.isEmpty ? user : path
        if host.hasPrefix("/") {
            return .init(unixSocketPath: "\(host)/.s.PGSQL.\(port)", username: user, password: nil, database: database)
        }
        return .init(host: host, port: port, username: user, password: nil, database: database, tls: .disable)
    }

    static let usage = """
        Usage: myinfo-peer --database-url URL [--port P] [--host H] [--pool-size N] [--statement-file PATH]
          --database-url    postgresql://user@host:port/database, or postgresql:///database?host=/socket/dir&port=P&user=U
          --port            HTTP port (default 8090); --host its address (default 127.0.0.1)
          --pool-size       postgres-nio connections (default 16)
          --statement-file  the SQL to prepare, $1 the uid (default: a copy of our server's myinfo statement)
        """
}
