/// A configuration problem found while setting up verification (a root certificate file that does not
/// parse, an empty stub secret, ...). Distinct from ``ReceiptRefusal``, which is about the evidence.
public struct ReceiptsConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
