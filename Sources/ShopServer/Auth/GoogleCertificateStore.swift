import Synchronization

/// The current ``GoogleCertificates``, swapped atomically when the operator's job has rotated the file
/// (``reload()``) or a fetch from Google's URL brought a new document (``replace(with:)``). Verification
/// reads a snapshot and never waits on a reload's file I/O or a fetch.
public final class GoogleCertificateStore: Sendable {
    /// The file ``reload()`` reads; `nil` for a store built from a fixed or fetched key set.
    public let path: String?
    /// The URL the keys were fetched from and are refreshed from (``GoogleCertificateRefresher``).
    public let url: String?
    /// How long the fetched document said it stays fresh, when the store was made from a fetch.
    let initialFreshness: Duration?
    private let current: Mutex<GoogleCertificates>

    /// Loads `path` now; throws when it is unreadable or holds no usable key.
    public init(contentsOfFile path: String) throws(AuthConfigurationError) {
        self.path = path
        self.url = nil
        self.initialFreshness = nil
        self.current = Mutex(try GoogleCertificates.load(contentsOfFile: path))
    }

    /// A store over a fixed key set (tests, or keys obtained elsewhere). ``reload()`` keeps it as it is.
    public init(_ certificates: GoogleCertificates) {
        self.path = nil
        self.url = nil
        self.initialFreshness = nil
        self.current = Mutex(certificates)
    }

    /// A store over what a fetch from `url` brought, refreshed from there while `serve` runs.
    public init(fetched: FetchedGoogleCertificates, from url: String) {
        self.path = nil
        self.url = url
        self.initialFreshness = fetched.freshFor
        self.current = Mutex(fetched.certificates)
    }

    /// The key set in use now.
    public var certificates: GoogleCertificates { current.withLock { $0 } }

    /// Re-reads the file and swaps in its keys. Blocking file I/O: call it from a background task, not
    /// a request handler. On failure the keys in use stay as they were and the error says why.
    /// - Returns: the key set now in use.
    @discardableResult
    public func reload() throws(AuthConfigurationError) -> GoogleCertificates {
        guard let path else { return certificates }
        let fresh = try GoogleCertificates.load(contentsOfFile: path)
        current.withLock { $0 = fresh }
        return fresh
    }

    /// Swaps in a key set fetched anew.
    func replace(with certificates: GoogleCertificates) {
        current.withLock { $0 = certificates }
    }
}
