import Synchronization

/// The current ``GoogleCertificates``, swapped atomically by ``reload()`` when the operator's job has
/// rotated the file. Verification reads a snapshot and never waits on a reload's file I/O.
public final class GoogleCertificateStore: Sendable {
    /// The file ``reload()`` reads; `nil` for a store built from a fixed key set.
    public let path: String?
    private let current: Mutex<GoogleCertificates>

    /// Loads `path` now; throws when it is unreadable or holds no usable key.
    public init(contentsOfFile path: String) throws(AuthConfigurationError) {
        self.path = path
        self.current = Mutex(try GoogleCertificates.load(contentsOfFile: path))
    }

    /// A store over a fixed key set (tests, or keys obtained elsewhere). ``reload()`` keeps it as it is.
    public init(_ certificates: GoogleCertificates) {
        self.path = nil
        self.current = Mutex(certificates)
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
}
