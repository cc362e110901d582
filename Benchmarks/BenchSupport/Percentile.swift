/// The nearest-rank percentile of ascending `sorted` values (`p` in 0...1: 0.5 the median, 1 the
/// maximum); nil when there are none. Every benchmark's latency figures use this one definition.
public func percentile<Value>(_ sorted: [Value], _ p: Double) -> Value? {
    guard !sorted.isEmpty else { return nil }
    let rank = Int((p * Double(sorted.count)).rounded(.up))
    return sorted[min(sorted.count - 1, max(0, rank - 1))]
}
