/// Structure-aware mutations for BER/DER inputs (classic receipts): libFuzzer's byte mutations cannot change
/// the length of anything inside a DER structure without breaking every enclosing length, so they never try
/// a longer date or one more certificate. This mutator parses the input as a tree of TLVs (into OCTET STRINGs
/// that hold DER, such as the receipt's attributes), changes one node, and writes the tree back with the
/// lengths made right again.
public enum DERMutator {
    /// A mutation of `bytes` of at most `maxSize` bytes. `mutateBytes(bytes, maxSize)` is libFuzzer's own
    /// byte mutator (`LLVMFuzzerMutate`), applied to one node's content or, when the input is no TLV tree or at
    /// random, to the whole input.
    public static func mutate(
        _ bytes: [UInt8], maxSize: Int, seed: UInt32, mutateBytes: ([UInt8], Int) -> [UInt8]
    ) -> [UInt8] {
        var random = SplitMix64(seed: UInt64(seed))
        guard random.next(below: 8) != 0, var tree = DERNode.parseAll(bytes[...]), !tree.isEmpty else {
            return mutateBytes(bytes, maxSize)
        }
        var paths: [[Int]] = []
        DERNode.collectPaths(tree, prefix: [], into: &paths)
        let path = paths[random.next(below: paths.count)]
        let node = DERNode.node(at: path, in: tree)
        switch random.next(below: 6) {
        case 0:
            // Another node's copy beside this one (one more certificate, a repeated attribute).
            let other = DERNode.node(at: paths[random.next(below: paths.count)], in: tree)
            DERNode.insert(other, after: path, in: &tree)
        case 1:
            DERNode.remove(at: path, in: &tree)
        case 2:
            // This node replaced by a copy of another.
            DERNode.replace(
                at: path, with: DERNode.node(at: paths[random.next(below: paths.count)], in: tree), in: &tree)
        default:
            // The content of a leaf, mutated by libFuzzer, at any length.
            var leaf = node
            guard case .primitive(let content) = node.content else { return mutateBytes(bytes, maxSize) }
            let budget = maxSize - bytes.count + content.count
            guard !content.isEmpty, budget > 0 else { return mutateBytes(bytes, maxSize) }
            leaf.content = .primitive(mutateBytes(content, min(budget, content.count * 2 + 64)))
            DERNode.replace(at: path, with: leaf, in: &tree)
        }
        let mutated = tree.flatMap { $0.serialized() }
        guard mutated.count <= maxSize, mutated != bytes else { return mutateBytes(bytes, maxSize) }
        return mutated
    }
}

/// One TLV of a BER or DER encoding: a leaf, a constructed value, or an OCTET STRING whose content is itself
/// a sequence of TLVs (encapsulated DER).
struct DERNode: Equatable {
    enum Content: Equatable {
        case primitive([UInt8])
        case constructed([DERNode])
        case encapsulated([DERNode])
    }

    var identifier: [UInt8]
    /// An indefinite length (`80` … `00 00`), kept as it was.
    var indefinite: Bool
    /// The length octets as read, written back while the content keeps its length (non-minimal forms stay).
    var lengthOctets: [UInt8]
    var content: Content

    /// Every TLV of `bytes`, back to back; nil unless they fill it exactly.
    static func parseAll(_ bytes: ArraySlice<UInt8>, depth: Int = 0) -> [DERNode]? {
        guard depth < 32 else { return nil }
        var nodes: [DERNode] = []
        var rest = bytes
        while !rest.isEmpty {
            guard let (node, remaining) = parse(rest, depth: depth) else { return nil }
            nodes.append(node)
            rest = remaining
        }
        return nodes
    }

    private static func parse(_ bytes: ArraySlice<UInt8>, depth: Int) -> (DERNode, ArraySlice<UInt8>)? {
        var index = bytes.startIndex
        guard index < bytes.endIndex, depth < 32 else { return nil }
        let first = bytes[index]
        index += 1
        if first & 0x1F == 0x1F {
            repeat {
                guard index < bytes.endIndex, index - bytes.startIndex < 6 else { return nil }
                index += 1
            } while bytes[index - 1] & 0x80 != 0
        }
        let identifier = Array(bytes[bytes.startIndex..<index])
        let isConstructed = first & 0x20 != 0
        guard index < bytes.endIndex else { return nil }
        let lengthStart = index
        let lengthByte = bytes[index]
        index += 1
        if lengthByte == 0x80 {
            guard isConstructed else { return nil }
            var children: [DERNode] = []
            var rest = bytes[index...]
            while !rest.starts(with: [0, 0]) {
                guard let (child, remaining) = parse(rest, depth: depth + 1) else { return nil }
                children.append(child)
                rest = remaining
            }
            let node = DERNode(
                identifier: identifier, indefinite: true, lengthOctets: [0x80], content: .constructed(children))
            return (node, rest.dropFirst(2))
        }
        var length = Int(lengthByte)
        if lengthByte > 0x80 {
            let count = Int(lengthByte & 0x7F)
            guard count <= 4, bytes.endIndex - index >= count else { return nil }
            length = bytes[index..<index + count].reduce(0) { $0 << 8 | Int($1) }
            index += count
        }
        guard bytes.endIndex - index >= length else { return nil }
        let body = bytes[index..<index + length]
        let lengthOctets = Array(bytes[lengthStart..<index])
        let content: Content
        if isConstructed {
            guard let children = parseAll(body, depth: depth + 1) else { return nil }
            content = .constructed(children)
        } else if identifier == [0x04], body.count >= 2, let inner = parseAll(body, depth: depth + 1) {
            content = .encapsulated(inner)
        } else {
            content = .primitive(Array(body))
        }
        return (
            DERNode(identifier: identifier, indefinite: false, lengthOctets: lengthOctets, content: content),
            bytes[(index + length)...]
        )
    }

    func serialized() -> [UInt8] {
        let body: [UInt8]
        switch content {
        case .primitive(let bytes): body = bytes
        case .constructed(let children), .encapsulated(let children): body = children.flatMap { $0.serialized() }
        }
        if indefinite { return identifier + [0x80] + body + [0, 0] }
        return identifier
            + (Self.length(of: lengthOctets) == body.count ? lengthOctets : Self.minimalLength(body.count))
            + body
    }

    private static func length(of octets: [UInt8]) -> Int {
        guard let first = octets.first else { return -1 }
        return first < 0x80 ? Int(first) : octets.dropFirst().reduce(0) { $0 << 8 | Int($1) }
    }

    private static func minimalLength(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var value = count
        while value > 0 {
            bytes.insert(UInt8(value & 0xFF), at: 0)
            value >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    var children: [DERNode]? {
        switch content {
        case .primitive: nil
        case .constructed(let children), .encapsulated(let children): children
        }
    }

    private mutating func setChildren(_ children: [DERNode]) {
        switch content {
        case .primitive: break
        case .constructed: content = .constructed(children)
        case .encapsulated: content = .encapsulated(children)
        }
    }

    /// The path (child indexes from the top level) of every node, parents before children.
    static func collectPaths(_ nodes: [DERNode], prefix: [Int], into paths: inout [[Int]]) {
        for (index, node) in nodes.enumerated() {
            paths.append(prefix + [index])
            if let children = node.children { collectPaths(children, prefix: prefix + [index], into: &paths) }
        }
    }

    static func node(at path: [Int], in nodes: [DERNode]) -> DERNode {
        let node = nodes[path[0]]
        return path.count == 1 ? node : self.node(at: Array(path.dropFirst()), in: node.children ?? [])
    }

    /// Applies `change` to the list of siblings that holds the node at `path`, with that node's index.
    private static func editSiblings(
        at path: [Int], in nodes: inout [DERNode], _ change: (inout [DERNode], Int) -> Void
    ) {
        guard path.count > 1 else { return change(&nodes, path[0]) }
        var children = nodes[path[0]].children ?? []
        editSiblings(at: Array(path.dropFirst()), in: &children, change)
        nodes[path[0]].setChildren(children)
    }

    static func replace(at path: [Int], with node: DERNode, in nodes: inout [DERNode]) {
        editSiblings(at: path, in: &nodes) { siblings, index in siblings[index] = node }
    }

    static func insert(_ node: DERNode, after path: [Int], in nodes: inout [DERNode]) {
        editSiblings(at: path, in: &nodes) { siblings, index in siblings.insert(node, at: index + 1) }
    }

    static func remove(at path: [Int], in nodes: inout [DERNode]) {
        editSiblings(at: path, in: &nodes) { siblings, index in siblings.remove(at: index) }
    }
}

/// A small seeded generator, so that libFuzzer's seed decides every choice (runs replay alike).
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }

    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
