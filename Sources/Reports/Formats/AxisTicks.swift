/// The labelled values of a chart's value axis: multiples of a round step (1, 2 or 5 times a power
/// of ten, never finer than `minimumStep`: a currency's minor unit in milliunits, 1 for counts),
/// from the multiple at or below the lowest value to the one at or above the highest, zero always
/// among them, and at most `maximumIntervals` steps apart end to end. Integer arithmetic (Int128
/// inside), so the same figures give the same ticks and no value overflows.
struct AxisTicks: Sendable, Hashable {
    /// Ascending.
    let values: [Int64]
    let step: Int64

    static let maximumIntervals: Int128 = 5

    init(lowest: Int64, highest: Int64, minimumStep: Int64 = 1) {
        let low = Int128(min(lowest, 0))
        let high = Int128(max(highest, 0))
        var power = Int128(max(1, minimumStep))
        var step = power
        search: while true {
            for multiple: Int128 in [1, 2, 5] {
                step = power * multiple
                let top = Self.ceiling(high, step)
                let bottom = Self.floor(low, step)
                // At least one step, so an all-zero chart still has an axis from 0 to one step.
                if max(1, (top - bottom) / step) <= Self.maximumIntervals { break search }
            }
            power *= 10
        }
        let top = max(Self.ceiling(high, step), low == 0 && high == 0 ? step : 0)
        let bottom = Self.floor(low, step)
        var values: [Int64] = []
        var value = bottom
        while value <= top {
            values.append(Int64(clamping: value))
            value += step
        }
        self.values = values
        self.step = Int64(clamping: step)
    }

    /// The least multiple of `step` at or above `value`.
    static func ceiling(_ value: Int128, _ step: Int128) -> Int128 {
        let quotient = value / step
        return (value % step == 0 || value < 0 ? quotient : quotient + 1) * step
    }

    /// The greatest multiple of `step` at or below `value`.
    static func floor(_ value: Int128, _ step: Int128) -> Int128 {
        let quotient = value / step
        return (value % step == 0 || value > 0 ? quotient : quotient - 1) * step
    }
}
