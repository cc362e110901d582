/// Draws a `ReportChart` as inline SVG inside a `<figure>`: bars in whole pixels (so the same
/// figures give the same bytes), colours from the page's style sheet (so dark mode recolours them),
/// each bar titled with its exact value, a legend, and the axis labelled at round steps (`AxisTicks`).
struct SVGChart {
    let chart: ReportChart

    init(_ chart: ReportChart) { self.chart = chart }

    /// Drawing units across; a phone shows about 360 CSS pixels of it, a desktop up to 600.
    static let width = 400
    /// The least room left of the plot for the axis labels, and for the item names of a horizontal
    /// chart; each grows to its longest label (`textWidth`), the names up to `maximumLabelWidth`.
    static let axisWidth = 52
    static let labelWidth = 170
    static let maximumLabelWidth = 240

    /// How many drawing units `text` takes at the charts' 11px font, rounded up: digits are 7 units
    /// wide (measured in Chromium: "1,234,567" 55.9), separators and spaces about half that, Hangul
    /// and other wide scripts a whole em. An overestimate for Latin letters, so a label never runs
    /// past the edge, whatever font the reader's system picks.
    static func textWidth(_ text: String) -> Int {
        var width = 0.0
        for scalar in text.unicodeScalars {
            switch scalar {
            case ",", ".", " ", "'", ":", ";", "(", ")", "-", "−": width += 4.5
            case _ where scalar.value >= 0x1100: width += 11
            default: width += 7
            }
        }
        return Int(width.rounded(.up))
    }

    func figure() -> String {
        var lines = ["<figure class=\"chart\">", "<figcaption>\(HTMLDocument.escape(chart.title))</figcaption>"]
        if chart.categories.isEmpty {
            lines.append("<p>Nothing to draw.</p>")
        } else {
            lines.append(chart.layout == .horizontal ? horizontal() : vertical())
        }
        if chart.series.count > 1 {
            lines.append(
                "<ul class=\"legend\">"
                    + chart.series.enumerated().map { index, series in
                        "<li><span class=\"swatch \(seriesClass(index))\"></span>\(HTMLDocument.escape(series.name))</li>"
                    }.joined() + "</ul>")
        }
        lines.append("</figure>")
        return lines.joined(separator: "\n")
    }

    /// The style class of series `index`: `s0`, `s1`, … (the trend's net revenue green, refunds
    /// red); returning buyers get `s2`, a colour of their own, so they never read as refunds.
    func seriesClass(_ index: Int) -> String {
        chart.purpose == .buyers && index == 1 ? "s2" : "s\(index)"
    }

    // MARK: Vertical bars (grouped or stacked) over periods

    private func vertical() -> String {
        let (top, bottom, plotHeight) = (12, 28, 150)
        let height = top + plotHeight + bottom
        let stacked = chart.layout == .stacked
        var highest: Int64 = 0
        var lowest: Int64 = 0
        for category in chart.categories.indices {
            let values = chart.series.map { $0.values[category] }
            if stacked {
                highest = max(highest, values.filter { $0 > 0 }.reduce(0, +))
                lowest = min(lowest, values.filter { $0 < 0 }.reduce(0, +))
            } else {
                highest = max(highest, values.max() ?? 0)
                lowest = min(lowest, values.min() ?? 0)
            }
        }
        // The axis runs from a round tick at or below the lowest value to one at or above the highest.
        let ticks = AxisTicks(
            lowest: lowest, highest: highest,
            minimumStep: chart.currency.map(CurrencyFormat.minorUnitMilli) ?? 1
        ).values.sorted(by: >)
        highest = ticks.first ?? highest
        lowest = ticks.last ?? lowest
        if highest == lowest { highest = lowest + 1 }
        let span = Double(highest) - Double(lowest)
        func y(_ value: Int64) -> Int {
            top + Int(((Double(highest) - Double(value)) / span * Double(plotHeight)).rounded())
        }

        // The labels end 6 units left of the plot and must start inside the drawing.
        let widest = ticks.map { Self.textWidth(chart.label($0)) }.max() ?? 0
        let left = max(Self.axisWidth, widest + 10)
        let plotWidth = Self.width - left - 8
        var parts = [svgOpen(height: height)]
        for value in ticks {
            let line = y(value)
            parts.append("<line class=\"grid\" x1=\"\(left)\" y1=\"\(line)\" x2=\"\(Self.width - 8)\" y2=\"\(line)\"/>")
            parts.append(
                "<text class=\"axis\" x=\"\(left - 6)\" y=\"\(line + 4)\" text-anchor=\"end\">\(HTMLDocument.escape(chart.label(value)))</text>"
            )
        }
        let slot = plotWidth / chart.categories.count
        let labelEvery = max(1, (chart.categories.count * 34 + plotWidth - 1) / plotWidth)
        for (category, name) in chart.categories.enumerated() {
            let x = left + category * slot
            let barsWidth = max(2, slot * 4 / 5)
            let barWidth = stacked ? barsWidth : max(1, barsWidth / chart.series.count)
            var positive: Int64 = 0
            var negative: Int64 = 0
            for (index, series) in chart.series.enumerated() {
                let value = series.values[category]
                let from: Int64
                let to: Int64
                if stacked {
                    if value >= 0 {
                        (from, to) = (positive, positive + value); positive += value
                    } else {
                        (from, to) = (negative, negative + value); negative += value
                    }
                } else {
                    (from, to) = (0, value)
                }
                let barX = x + (slot - barsWidth) / 2 + (stacked ? 0 : index * barWidth)
                let (y1, y2) = (y(max(from, to)), y(min(from, to)))
                parts.append(
                    "<rect class=\"\(seriesClass(index))\" x=\"\(barX)\" y=\"\(y1)\" width=\"\(barWidth)\" height=\"\(max(value == 0 ? 0 : 1, y2 - y1))\">"
                        + "<title>\(HTMLDocument.escape("\(name): \(series.name) \(chart.label(value))"))</title></rect>"
                )
            }
            if category % labelEvery == 0 {
                parts.append(
                    "<text class=\"axis\" x=\"\(x + slot / 2)\" y=\"\(height - 8)\" text-anchor=\"middle\">\(HTMLDocument.escape(name))</text>"
                )
            }
        }
        parts.append("</svg>")
        return parts.joined(separator: "\n")
    }

    // MARK: Horizontal bars over named items

    private func horizontal() -> String {
        let row = 20
        let top = 6
        let height = top * 2 + row * chart.categories.count
        let values = chart.series[0].values
        let highest = max(1, values.max() ?? 1)
        // Names end 8 units left of the bars; a value label starts 6 units past its bar.
        let names = chart.categories.map { Self.textWidth($0) }.max() ?? 0
        let left = min(Self.maximumLabelWidth, max(Self.labelWidth, names + 10))
        let valueWidth = values.map { Self.textWidth(chart.label($0)) }.max() ?? 0
        let plotWidth = Self.width - left - max(36, valueWidth + 10)
        var parts = [svgOpen(height: height)]
        for (index, name) in chart.categories.enumerated() {
            let value = values[index]
            let y = top + index * row
            let length = Int((Double(max(0, value)) / Double(highest) * Double(plotWidth)).rounded())
            parts.append(
                "<text class=\"axis\" x=\"\(left - 8)\" y=\"\(y + 14)\" text-anchor=\"end\">\(HTMLDocument.escape(name))</text>"
            )
            parts.append(
                "<rect class=\"s0\" x=\"\(left)\" y=\"\(y + 3)\" width=\"\(max(1, length))\" height=\"\(row - 6)\">"
                    + "<title>\(HTMLDocument.escape("\(name): \(chart.label(value))"))</title></rect>")
            parts.append(
                "<text class=\"value\" x=\"\(left + max(1, length) + 6)\" y=\"\(y + 14)\">\(HTMLDocument.escape(chart.label(value)))</text>"
            )
        }
        parts.append("</svg>")
        return parts.joined(separator: "\n")
    }

    private func svgOpen(height: Int) -> String {
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(Self.width) \(height)\" role=\"img\" "
            + "aria-label=\"\(HTMLDocument.escape(chart.title))\">"
    }
}
