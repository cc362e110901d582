/// An auth setting that cannot work (an unreadable or empty certificate file, an empty project id, a
/// too-short admin token), with a message for the operator. Thrown at start and by
/// ``GoogleCertificateStore/reload()``; never at request time.
public struct AuthConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
