/// The fields of an `application/x-www-form-urlencoded` body (the SeSAC surface's bodies), parsed
/// strictly: `+` is a space, `%XX` a byte, names and values must be valid UTF-8, and a name may appear
/// once. Anything else is an ``InputError`` (the SeSAC surface answers 501).
package struct FormFields: Sendable {
    package private(set) var values: [String: String] = [:]

    package init(parsing bytes: some Collection<UInt8>) throws(InputError) {
        guard !bytes.isEmpty else { return }
        // One copy into an array: splitting and indexing a ByteBufferView byte by byte through the generic
        // Collection cost the SeSAC purchase ~15% of its server CPU (a JWS is ~4 KB of form value).
        let bytes = Array(bytes)
        for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = try Self.decode(parts[0])
            let value = parts.count > 1 ? try Self.decode(parts[1]) : ""
            guard !name.isEmpty else { throw InputError("malformed_form", "a form field has no name") }
            guard values.updateValue(value, forKey: name) == nil else {
                throw InputError("malformed_form", "the form field \(name.prefix(40)) appears more than once")
            }
        }
    }

    package subscript(name: String) -> String? { values[name] }

    /// The field, which must be present and not empty.
    package func required(_ name: String) throws(InputError) -> String {
        guard let value = values[name], !value.isEmpty else { throw InputError.missingField(name) }
        return value
    }

    /// The field as a decimal integer (`-`, then 1–9 digits: larger numbers are no index or gender).
    package func requiredInteger(_ name: String) throws(InputError) -> Int {
        let text = try required(name)
        let digits = text.utf8.first == UInt8(ascii: "-") ? text.utf8.dropFirst() : text.utf8[...]
        guard (1...9).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(text)
        else {
            throw InputError(
                "not_an_integer", "the field \(name) must be an integer, got \(text.prefix(20).debugDescription)")
        }
        return value
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) throws(InputError) -> String {
        guard bytes.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "%") }) else {
            return try utf8(bytes)
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "+"):
                decoded.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                let high = bytes.index(after: index)
                guard high != bytes.endIndex, bytes.index(after: high) != bytes.endIndex,
                    let h = hexValue(bytes[high]), let l = hexValue(bytes[bytes.index(after: high)])
                else { throw InputError("malformed_form", "the form body has a bad %-escape") }
                decoded.append(h << 4 | l)
                index = bytes.index(after: high)
            default:
                decoded.append(byte)
            }
            index = bytes.index(after: index)
        }
        return try utf8(decoded)
    }

    private static func utf8(_ bytes: some Collection<UInt8>) throws(InputError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw InputError("invalid_utf8", "the form body is not valid UTF-8")
        }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
