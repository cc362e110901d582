import CLibPQ

extension ConnectionConfiguration {
    /// What libpq says is wrong with `url` (a URL or a conninfo string), parsed as a connection would
    /// parse it but without connecting; nil when it parses. Lets a command refuse a bad setting at
    /// start, naming where it came from, instead of failing at its first query.
    public static func urlProblem(_ url: String) -> String? {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(url, &errorMessage) else {
            let message = errorMessage.map { String(cString: $0).trimmingTrailingNewlines() } ?? "out of memory"
            if let errorMessage { PQfreemem(errorMessage) }
            return message
        }
        PQconninfoFree(parsed)
        return nil
    }
}
