import CZlib

/// gzip as Apple serves its reports (`.txt.gz`): detected by the magic bytes, inflated with zlib,
/// bounded so that a small file cannot inflate into unbounded memory.
enum Gzip {
    static func isGzip(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
    }

    /// The inflated bytes of one gzip member. Refuses a truncated stream, bytes after the member,
    /// and output past `maximumBytes`.
    static func inflate(_ input: [UInt8], maximumBytes: Int) throws(AppleSalesError) -> [UInt8] {
        var stream = z_stream()
        // 15 + 16: a gzip wrapper (not zlib, not raw deflate), the largest window.
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw AppleSalesError(.malformed, "zlib could not start inflating")
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var status: Int32 = Z_OK
        var consumed = 0
        var failure: AppleSalesError?
        input.withUnsafeBufferPointer { source in
            stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
            stream.avail_in = UInt32(source.count)
            while true {
                let produced: Int = chunk.withUnsafeMutableBufferPointer { target in
                    stream.next_out = target.baseAddress
                    stream.avail_out = UInt32(target.count)
                    status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return target.count - Int(stream.avail_out)
                }
                if output.count + produced > maximumBytes {
                    failure = AppleSalesError(
                        .tooLarge, "the file inflates to more than \(maximumBytes) bytes; refused (a gzip bomb?)")
                    return
                }
                output.append(contentsOf: chunk[0..<produced])
                switch status {
                case Z_STREAM_END:
                    consumed = source.count - Int(stream.avail_in)
                    return
                case Z_OK:
                    continue
                case Z_BUF_ERROR where stream.avail_in == 0:
                    failure = AppleSalesError(
                        .malformed, "the gzip stream is truncated (it ends before its end marker)")
                    return
                default:
                    let reason = stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                    failure = AppleSalesError(.malformed, "the gzip stream is corrupt: \(reason)")
                    return
                }
            }
        }
        if let failure { throw failure }
        guard consumed == input.count else {
            throw AppleSalesError(.malformed, "\(input.count - consumed) bytes follow the gzip stream")
        }
        return output
    }
}
