import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

/// The process's limit on open files, which every connection spends one of.
enum OpenFileLimit {
    /// Descriptors the server needs besides its connections: the database pool, the private cluster's
    /// pipes, logs, the verification threads' and the runtime's own.
    static let reserve = 256

    /// Raises the soft limit towards the hard one until `connections` plus ``reserve`` fit, as far as
    /// the hard limit allows; returns how many connections fit now.
    static func raise(toFit connections: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return connections }
        let wanted = rlim_t(connections + reserve)
        if limit.rlim_cur < wanted {
            var raised = limit
            raised.rlim_cur = min(wanted, limit.rlim_max)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return max(0, Int(clamping: limit.rlim_cur) - reserve)
    }

    /// The connection limit to serve with: `requested` when given (refused when the open-file limit
    /// cannot be raised to fit it), else the default, lowered to what fits.
    static func connectionLimit(requested: Int?, default fallback: Int) throws -> Int {
        let wanted = requested ?? fallback
        let fitting = raise(toFit: wanted)
        if fitting >= wanted { return wanted }
        guard requested == nil, fitting >= 64 else {
            throw ValidationError(
                "--max-connections \(wanted) needs \(wanted + reserve) open files, but this process may open only "
                    + "\(fitting + reserve) (ulimit -n): raise the limit or lower --max-connections")
        }
        return fitting
    }
}
