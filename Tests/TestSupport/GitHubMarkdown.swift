import Foundation

/// Markdown as GitHub renders it: Debian's `cmark-gfm` (GitHub's CommonMark renderer;
/// `scripts/install-deps.sh --for test` installs it) with GitHub's extensions (tables, autolinks of
/// URLs, `www.` and e-mail addresses, strikethrough, footnotes, task lists). Raw HTML is passed
/// through (`--unsafe`) and the tag filter is off, so whatever markup a text smuggled in shows up
/// as the element it would be, for the report tests to find.
public struct GitHubMarkdown: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The rendered HTML.
    public let html: String

    public init(rendering markdown: String) throws {
        let executable = try Self.executable()
        let folder = NSTemporaryDirectory() + "shopledger-cmark-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let input = folder + "/in.md"
        let output = folder + "/out.html"
        try Data(markdown.utf8).write(to: URL(fileURLWithPath: input))
        FileManager.default.createFile(atPath: output, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments =
            ["--unsafe"] + ["table", "autolink", "strikethrough", "footnotes", "tasklist"].flatMap { ["-e", $0] }
            + [input]
        process.standardOutput = handle
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "cmark-gfm exited with \(process.terminationStatus)")
        }
        html = String(decoding: try Data(contentsOf: URL(fileURLWithPath: output)), as: UTF8.self)
    }

    /// `cmark-gfm` on the PATH.
    static func executable() throws -> String {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(folder)/cmark-gfm"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw Failure(
            description: "cmark-gfm is not installed: run scripts/install-deps.sh --for test (make test does)")
    }

    /// The names of the elements in the page (`a`, `img`, `td`, …), lower-cased.
    public var elements: Set<String> {
        Set(html.matches(of: /<([A-Za-z][A-Za-z0-9]*)/).map { $0.output.1.lowercased() })
    }

    /// Every table row, each cell's inner HTML as rendered (header cells too).
    /// The elements the revenue report's own Markdown makes; anything else came from outside text.
    public static let reportElements: Set<String> = [
        "h1", "h2", "h3", "p", "ul", "li", "strong", "em", "code", "pre", "hr", "table", "thead", "tbody", "tr", "th",
        "td",
    ]

    /// Elements in the rendering that the report does not make itself (a link, an image, raw HTML, …).
    public var foreignElements: Set<String> { elements.subtracting(Self.reportElements) }

    public var tableRows: [[String]] {
        html.matches(of: /<tr>(.*?)<\/tr>/.dotMatchesNewlines()).map { row in
            row.output.1.matches(of: /<t[dh][^>]*>(.*?)<\/t[dh]>/.dotMatchesNewlines()).map { String($0.output.1) }
        }
    }

    /// `text` as `cmark-gfm` writes text: `&`, `<`, `>` and `"` as character references.
    public static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// The lines of the Markdown tables in `markdown` whose count of cell-separating pipes differs
    /// from their table's header line: a row a text broke. As GitHub's table parser splits, a `|`
    /// right after a backslash separates nothing (even after `\\`).
    public static func brokenTableLines(in markdown: String) -> [String] {
        var broken: [String] = []
        var headerPipes: Int?
        // CommonMark ends a line at LF, CR or CRLF.
        let lines = markdown.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        for line in lines {
            guard line.hasPrefix("|") else {
                headerPipes = nil
                continue
            }
            var pipes = 0
            var previous: Character = " "
            for character in line {
                if character == "|" && previous != "\\" { pipes += 1 }
                previous = character
            }
            if let expected = headerPipes {
                if pipes != expected { broken.append(String(line)) }
            } else {
                headerPipes = pipes
            }
        }
        return broken
    }
}
