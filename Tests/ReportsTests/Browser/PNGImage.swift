import CZlib
import Foundation

/// The pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's screenshots are), decoded
/// with zlib and the five PNG row filters; enough to tell a blank screenshot from a drawn one.
struct PNGImage {
    struct DecodeError: Error, CustomStringConvertible {
        let description: String
    }

    let width: Int
    let height: Int
    /// Red, green, blue of each pixel, row by row (alpha dropped).
    let pixels: [UInt32]

    init(contentsOf path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard bytes.count > 8, bytes[0..<8] == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else {
            throw DecodeError(description: "\(path) is not a PNG")
        }
        func uint32(_ at: Int) -> Int {
            Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        }
        var offset = 8
        var header: ArraySlice<UInt8> = []
        var compressed: [UInt8] = []
        while offset + 12 <= bytes.count {
            let length = uint32(offset)
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            guard offset + 12 + length <= bytes.count else { throw DecodeError(description: "truncated \(type) chunk") }
            let data = bytes[(offset + 8)..<(offset + 8 + length)]
            if type == "IHDR" { header = data }
            if type == "IDAT" { compressed += data }
            offset += 12 + length
        }
        guard header.count == 13 else { throw DecodeError(description: "no IHDR chunk") }
        let start = header.startIndex
        width = uint32(start)
        height = uint32(start + 4)
        let (depth, colourType, interlace) = (header[start + 8], header[start + 9], header[start + 12])
        guard depth == 8, colourType == 2 || colourType == 6, interlace == 0 else {
            throw DecodeError(description: "unsupported PNG: depth \(depth), colour type \(colourType)")
        }
        let channels = colourType == 6 ? 4 : 3
        let stride = width * channels
        var raw = [UInt8](repeating: 0, count: height * (stride + 1))
        var rawLength = uLongf(raw.count)
        let status = compressed.withUnsafeBufferPointer { source in
            raw.withUnsafeMutableBufferPointer { target in
                uncompress(target.baseAddress, &rawLength, source.baseAddress, uLong(source.count))
            }
        }
        guard status == Z_OK, Int(rawLength) == raw.count else {
            throw DecodeError(description: "zlib status \(status), \(rawLength) of \(raw.count) bytes")
        }
        // Undo each row's filter (PNG specification, section 9), in place.
        var previous = [UInt8](repeating: 0, count: stride)
        var decoded = [UInt32]()
        decoded.reserveCapacity(width * height)
        for row in 0..<height {
            let base = row * (stride + 1)
            let filter = raw[base]
            var line = Array(raw[(base + 1)..<(base + 1 + stride)])
            for index in 0..<stride {
                let left = index >= channels ? Int(line[index - channels]) : 0
                let up = Int(previous[index])
                let upLeft = index >= channels ? Int(previous[index - channels]) : 0
                let predictor: Int
                switch filter {
                case 0: predictor = 0
                case 1: predictor = left
                case 2: predictor = up
                case 3: predictor = (left + up) / 2
                case 4:
                    let estimate = left + up - upLeft
                    let (a, b, c) = (abs(estimate - left), abs(estimate - up), abs(estimate - upLeft))
                    predictor = a <= b && a <= c ? left : (b <= c ? up : upLeft)
                default: throw DecodeError(description: "unknown row filter \(filter)")
                }
                line[index] = UInt8(truncatingIfNeeded: Int(line[index]) + predictor)
            }
            for pixel in 0..<width {
                let at = pixel * channels
                decoded.append(UInt32(line[at]) << 16 | UInt32(line[at + 1]) << 8 | UInt32(line[at + 2]))
            }
            previous = line
        }
        pixels = decoded
    }

    /// How many pixels differ from the top-left one (the page's background).
    var nonBackgroundPixels: Int {
        guard let background = pixels.first else { return 0 }
        return pixels.reduce(0) { $0 + ($1 == background ? 0 : 1) }
    }

    var distinctColours: Int { Set(pixels).count }
}
