/// 32 deterministic bytes standing for the SHA-256 of some evidence (tests need distinctness only).
public func fakeDigest(_ text: String) -> [UInt8] {
    var state: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 { state = (state ^ UInt64(byte)) &* 0x100_0000_01b3 }
    var bytes: [UInt8] = []
    for _ in 0..<4 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        withUnsafeBytes(of: state.bigEndian) { bytes.append(contentsOf: $0) }
    }
    return bytes
}
