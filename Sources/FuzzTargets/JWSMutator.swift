import Foundation

/// Structure-aware mutations for ``JWSInput`` files (signed transactions, notifications, Firebase tokens):
/// most of a JWS file is its header's base64 certificates, so byte mutations rarely touch the payload, and
/// never make a number much larger. This mutator picks the header, the payload or the signature; mutates
/// the JSON as bytes, or one of its values: a number made extreme or scaled, a string mutated as bytes, an
/// `x5c` certificate through ``DERMutator``, a nested JWS (`signedTransactionInfo`) as a JWS file.
public enum JWSMutator {
    public static func mutate(
        _ bytes: [UInt8], maxSize: Int, seed: UInt32, mutateBytes: ([UInt8], Int) -> [UInt8]
    ) -> [UInt8] {
        var random = SplitMix64(seed: UInt64(seed))
        var parts = bytes.split(separator: 0x0A, maxSplits: 2, omittingEmptySubsequences: false).map(Array.init)
        guard parts.count == 3, random.next(below: 8) != 0 else { return mutateBytes(bytes, maxSize) }
        let part = [0, 0, 0, 1, 1, 1, 1, 2][random.next(below: 8)]
        let budget = maxSize - bytes.count + parts[part].count
        if part == 2 || random.next(below: 2) == 0 {
            parts[part] = mutateBytes(parts[part], max(budget, parts[part].count))
        } else if let mutated = mutateValue(in: parts[part], random: &random, mutateBytes: mutateBytes) {
            parts[part] = mutated
        } else {
            return mutateBytes(bytes, maxSize)
        }
        let result = parts[0] + [0x0A] + parts[1] + [0x0A] + parts[2]
        return result.count <= maxSize ? result : mutateBytes(bytes, maxSize)
    }

    /// `json` with one value changed, or nil when it is no JSON object.
    static func mutateValue(
        in json: [UInt8], random: inout SplitMix64, mutateBytes: ([UInt8], Int) -> [UInt8]
    ) -> [UInt8]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) else { return nil }
        var leaves: [[Any]] = []
        collectLeaves(object, path: [], into: &leaves)
        guard !leaves.isEmpty else { return nil }
        let path = leaves[random.next(below: leaves.count)]
        let changed = replacing(in: object, at: path[...]) { value in
            mutate(value, random: &random, mutateBytes: mutateBytes)
        }
        guard let data = try? JSONSerialization.data(withJSONObject: changed, options: [.fragmentsAllowed]) else {
            return nil
        }
        return Array(data)
    }

    private static func mutate(
        _ value: Any, random: inout SplitMix64, mutateBytes: ([UInt8], Int) -> [UInt8]
    ) -> Any {
        if let text = value as? String {
            if text.hasPrefix("eyJ"), let file = JWSInput.file(compact: text) {
                let mutated = JWSMutator.mutate(
                    file, maxSize: file.count * 2 + 64, seed: UInt32(truncatingIfNeeded: random.next()),
                    mutateBytes: mutateBytes)
                return JWSInput.compact(mutated)
            }
            if text.count > 64, let der = Data(base64Encoded: text) {
                let mutated = DERMutator.mutate(
                    Array(der), maxSize: der.count * 2 + 64, seed: UInt32(truncatingIfNeeded: random.next()),
                    mutateBytes: mutateBytes)
                return Data(mutated).base64EncodedString()
            }
            let bytes = Array(text.utf8)
            return String(decoding: mutateBytes(bytes, bytes.count * 2 + 16), as: UTF8.self)
        }
        if let number = value as? NSNumber, !(value is Bool) {
            let double = number.doubleValue
            let choices: [Any] = [
                0, -1, 1, Int64.max, Int64.min, 1 << 53, -double, double + 1, double - 1, double * 1000,
                double * 1_000_000, double / 1000, 1e300, -1e300, 0.5,
            ]
            return choices[random.next(below: choices.count)]
        }
        return [true, false, NSNull(), 0, "", [Any](), [String: Any]()][random.next(below: 7)]
    }

    /// The path (keys and indexes) of every value that is not an object or array.
    private static func collectLeaves(_ value: Any, path: [Any], into leaves: inout [[Any]]) {
        if let object = value as? [String: Any] {
            for (key, child) in object.sorted(by: { $0.key < $1.key }) {
                collectLeaves(child, path: path + [key], into: &leaves)
            }
        } else if let array = value as? [Any] {
            for (index, child) in array.enumerated() { collectLeaves(child, path: path + [index], into: &leaves) }
        } else {
            leaves.append(path)
        }
    }

    private static func replacing(in value: Any, at path: ArraySlice<Any>, with change: (Any) -> Any) -> Any {
        guard let step = path.first else { return change(value) }
        if var object = value as? [String: Any], let key = step as? String, let child = object[key] {
            object[key] = replacing(in: child, at: path.dropFirst(), with: change)
            return object
        }
        if var array = value as? [Any], let index = step as? Int, array.indices.contains(index) {
            array[index] = replacing(in: array[index], at: path.dropFirst(), with: change)
            return array
        }
        return value
    }
}
