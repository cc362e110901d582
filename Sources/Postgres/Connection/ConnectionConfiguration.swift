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
    /// Seconds libpq waits for a connection to be made (0: no limit).
    public var connectTimeoutSeconds: Int
    /// Statements with parameters each connection keeps prepared on the server, least recently
    /// used evicted first (0: send every statement unnamed, parsed and planned on each call).
    /// Server memory per statement is a parse tree and a plan, tens of kilobytes for a large CTE.
    public var preparedStatementCacheSize: Int

    public init(
        url: String = "", applicationName: String = "shopledger", connectTimeoutSeconds: Int = 5,
        preparedStatementCacheSize: Int = 128
    ) {
        self.url = url
        self.applicationName = applicationName
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.preparedStatementCacheSize = max(0, preparedStatementCacheSize)
    }

    /// Settings added to every connection: the session pins (encoding, zone, date style) and the
    /// application name and connect timeout unless the URL sets them.
    var sessionParameters: [(String, String)] {
        var parameters: [(String, String)] = [
            ("application_name", applicationName),
            ("client_encoding", "UTF8"),
            ("options", "-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=iso_8601 -c bytea_output=hex -c extra_float_digits=1"),
        ]
        if connectTimeoutSeconds > 0 { parameters.append(("connect_timeout", String(connectTimeoutSeconds))) }
        return parameters
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
