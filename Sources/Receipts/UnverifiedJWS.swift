import Foundation

/// The decoded header and payload of a JWS, **not verified**: for support staff looking at what a client
/// or Apple sent (the `verify-transaction` command prints it next to the verdict). Never base decisions on it.
public struct UnverifiedJWS: Sendable {
    /// The header JSON, pretty-printed with sorted keys (`x5c` entries shortened).
    public let headerJSON: String
    /// The payload JSON, pretty-printed with sorted keys.
    public let payloadJSON: String
    /// Whether the payload has a `notificationType`, i.e. is an App Store Server Notification.
    public let isNotification: Bool

    public init(_ jws: String, maxInputBytes: Int = VerifierConfiguration.defaultMaxInputBytes) throws(ReceiptRefusal) {
        let parsed = try CompactJWS(parsing: jws, maxInputBytes: maxInputBytes)
        guard var header = Self.object(parsed.headerJSON), let payload = Self.object(parsed.payloadJSON) else {
            throw ReceiptRefusal(.malformed, "JWS header or payload is not a JSON object")
        }
        if let chain = header["x5c"] as? [String] {
            header["x5c"] = chain.map { $0.count > 40 ? "\($0.prefix(24))…(\($0.count) chars)" : $0 }
        }
        self.headerJSON = Self.pretty(header)
        self.payloadJSON = Self.pretty(payload)
        self.isNotification = payload["notificationType"] != nil
    }

    private static func object(_ bytes: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }

    private static func pretty(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
