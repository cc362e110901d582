/// Everything the HTTP service needs to know at start, validated before it starts.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int

    public init(host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
    }

    /// Clear errors for settings that cannot work.
    public func validate() throws(ConfigurationError) {
        guard !host.isEmpty else { throw ConfigurationError("the listen host is empty") }
        guard (0...65535).contains(port) else { throw ConfigurationError("port \(port) is not between 0 and 65535") }
    }
}

/// A configuration value that cannot work, with a message for the operator.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
