import Foundation
import Testing

/// Debian's Chromium, headless: renders a file from disk to a PNG screenshot and collects what the
/// page printed to its console (Chromium logs each console message, errors and refused loads
/// included, as an `INFO:CONSOLE` line on standard error).
struct HeadlessChromium {
    struct Rendering {
        let screenshot: PNGImage
        /// Every console message of the page (the report has no script, so any is a fault).
        let consoleMessages: [String]
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let executable: String

    /// `chromium` on the PATH; `scripts/install-deps.sh` (run by `make test`) installs it.
    static func find() throws -> HeadlessChromium {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(folder)/chromium"
            if FileManager.default.isExecutableFile(atPath: path) { return HeadlessChromium(executable: path) }
        }
        throw Failure(description: "chromium is not installed: run scripts/install-deps.sh (make test does)")
    }

    /// Renders `page` in a window of `width` × `height` CSS pixels, light or with the system's dark
    /// mode, in a private profile that is removed afterwards.
    func render(_ page: String, width: Int, height: Int, dark: Bool = false) throws -> Rendering {
        let folder = NSTemporaryDirectory() + "shopledger-chromium-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let screenshot = folder + "/screenshot.png"
        let log = folder + "/stderr.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        // `timeout` ends a browser that hangs instead of the test run.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments =
            [
                "120", executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--hide-scrollbars", "--user-data-dir=\(folder)/profile", "--enable-logging=stderr", "--v=0",
                "--window-size=\(width),\(height)", "--screenshot=\(screenshot)",
            ] + (dark ? ["--force-dark-mode"] : []) + [URL(fileURLWithPath: page).absoluteString]
        let logHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? logHandle.close() }
        process.standardOutput = logHandle
        process.standardError = logHandle
        try process.run()
        process.waitUntilExit()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0, FileManager.default.fileExists(atPath: screenshot) else {
            throw Failure(
                description:
                    "chromium exited with \(process.terminationStatus) and no screenshot:\n\(output.suffix(2000))")
        }
        let messages = output.split(separator: "\n").filter { $0.contains(":CONSOLE") }.map(String.init)
        return Rendering(screenshot: try PNGImage(contentsOf: screenshot), consoleMessages: messages)
    }
}
