/// The bounds every input is checked against before it can drive memory or loops. A daily report of
/// one app is a few hundred rows; these leave room for large catalogs and refuse gzip bombs.
public struct SummarySalesLimits: Sendable, Hashable {
    /// Bytes of the file as given (gzip'd or not).
    public var maximumFileBytes: Int
    /// Bytes after inflating; inflating stops and the file is refused past it.
    public var maximumUncompressedBytes: Int
    /// Bytes of one line, without its line ending.
    public var maximumLineBytes: Int
    /// Data rows (lines after the header).
    public var maximumRows: Int
    /// Columns of the header.
    public var maximumColumns: Int

    public init(
        maximumFileBytes: Int = 32 << 20, maximumUncompressedBytes: Int = 64 << 20, maximumLineBytes: Int = 64 << 10,
        maximumRows: Int = 500_000, maximumColumns: Int = 100
    ) {
        self.maximumFileBytes = maximumFileBytes
        self.maximumUncompressedBytes = maximumUncompressedBytes
        self.maximumLineBytes = maximumLineBytes
        self.maximumRows = maximumRows
        self.maximumColumns = maximumColumns
    }

    public static let standard = SummarySalesLimits()
}
