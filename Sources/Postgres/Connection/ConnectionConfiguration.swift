import Foundation

/// Where and how to connect.
///
/// `url` may be a `postgres://user:password@host:port/db?param=value` URL or a libpq conninfo
/// string (`host=/tmp port=5432 dbname=shop`); libpq parses both, and every setting left out falls
/// back to the usual `PG*` environment variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, …)
/// and libpq's defaults. Every connection is pinned to UTF8, UTC and ISO dates, whatever the server's
/// defaults, so text values always read back the same way.
public struct ConnectionConfiguration: Sendable, Hashable {
    public var url: String
    public var applicationName: String
    /// Seconds libpq waits for a connection to be made, per host of a multi-host conninfo (0: no
    /// limit). 2, libpq's smallest: a dead first host (silent, after a failover) costs each new
    /// connection this much before libpq tries the next.
    public var connectTimeoutSeconds: Int
    /// Statements with parameters each connection keeps prepared on the server, least recently
    /// used evicted first (0: send every statement unnamed, parsed and planned on each call).
    /// Server memory per statement is a parse tree and a plan, tens of kilobytes for a large CTE.
    public var preparedStatementCacheSize: Int
    /// Executions after which a prepared statement is prepared again (0: never). PostgreSQL keeps a
    /// statement's custom-plan costs across the invalidation an ANALYZE causes, so a statement first
    /// run on a small table, once the table has grown, compares the grown table's generic plan with
    /// the small table's average custom cost and plans every execution afresh for a long time. Prepared
    /// again, it settles on the generic plan after five executions, as a new session does. One extra
    /// round trip and five planned executions per this many: about a thousandth of the planning.
    public var preparedStatementMaxUses: Int
    /// The server's `statement_timeout` for this pool's sessions: a statement running longer is
    /// cancelled by the server itself (nil: the server's default, usually none).
    public var statementTimeout: Duration?
    /// The server's `idle_in_transaction_session_timeout`: a session that sits in an open
    /// transaction longer is ended by the server, releasing its locks (nil: the server's default).
    public var idleInTransactionSessionTimeout: Duration?
    /// TCP keepalives and `tcp_user_timeout` for connections over TCP (libpq ignores them on Unix
    /// sockets): a peer that vanished is noticed within about this long instead of the kernel's
    /// two hours (nil: the system's defaults).
    public var deadPeerTimeout: Duration?

    public init(
        url: String = "", applicationName: String = "shopledger", connectTimeoutSeconds: Int = 2,
        preparedStatementCacheSize: Int = 128, preparedStatementMaxUses: Int = 5_000, statementTimeout: Duration? = nil,
        idleInTransactionSessionTimeout: Duration? = nil, deadPeerTimeout: Duration? = .seconds(10)
    ) {
        self.url = url
        self.applicationName = applicationName
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.preparedStatementCacheSize = max(0, preparedStatementCacheSize)
        self.preparedStatementMaxUses = max(0, preparedStatementMaxUses)
        self.statementTimeout = statementTimeout
        self.idleInTransactionSessionTimeout = idleInTransactionSessionTimeout
        self.deadPeerTimeout = deadPeerTimeout
    }

    /// Settings added to every connection: the session pins (encoding, zone, date style), the
    /// pool's server-side timeouts, and the application name, connect timeout and keepalive
    /// settings unless the URL sets them (`defaultedKeywords`).
    var sessionParameters: [(String, String)] {
        var options =
            "-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=iso_8601 -c bytea_output=hex -c extra_float_digits=1"
        if let statementTimeout { options += " -c statement_timeout=\(Self.milliseconds(statementTimeout))" }
        if let idleInTransactionSessionTimeout {
            options += " -c idle_in_transaction_session_timeout=\(Self.milliseconds(idleInTransactionSessionTimeout))"
        }
        var parameters: [(String, String)] = [
            ("application_name", applicationName),
            ("client_encoding", "UTF8"),
            ("options", options),
        ]
        if connectTimeoutSeconds > 0 { parameters.append(("connect_timeout", String(connectTimeoutSeconds))) }
        if let deadPeerTimeout {
            // Idle a third of the budget, then probe every sixth, three probes: about the budget in all.
            // tcp_user_timeout bounds unacknowledged data (a query sent into a dead link) the same way.
            let seconds = max(3, Int(deadPeerTimeout.components.seconds))
            parameters += [
                ("keepalives", "1"),
                ("keepalives_idle", String(max(1, seconds / 3))),
                ("keepalives_interval", String(max(1, seconds / 6))),
                ("keepalives_count", "3"),
                ("tcp_user_timeout", String(seconds * 1000)),
            ]
        }
        return parameters
    }

    /// Keywords a URL may set itself; ours apply only when it does not.
    static let defaultedKeywords: Set<String> = [
        "application_name", "connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout",
    ]

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// The URL with any password replaced by `***`, for logs and error messages.
    public var redacted: String {
        Self.redact(url)
    }

    static func redact(_ url: String) -> String {
        var text = url
        // URL form: scheme://user:password@host
        if let schemeEnd = text.range(of: "://"), let at = text[schemeEnd.upperBound...].firstIndex(of: "@") {
            let userInfo = text[schemeEnd.upperBound..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        // conninfo (`password=secret`) and URL query (`?password=secret&…`) forms.
        if let range = text.range(of: "password=") {
            let valueEnd = text[range.upperBound...].firstIndex { $0 == " " || $0 == "&" } ?? text.endIndex
            text.replaceSubrange(range.upperBound..<valueEnd, with: "***")
        }
        return text.isEmpty ? "(libpq defaults and PG* environment)" : text
    }
}
