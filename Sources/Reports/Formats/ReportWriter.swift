import Foundation
import Logging

/// Writes a report's files under an output folder, each atomically: the bytes go to a temporary
/// file in the same folder, are flushed to disk, and the file is renamed over the old one, so a
/// reader (or a crash) never sees half a report.
public struct ReportWriter: Sendable {
    let outputDirectory: String
    let logger: Logger

    public init(outputDirectory: String, logger: Logger = Logger(label: "shopledger.reports")) {
        self.outputDirectory = outputDirectory
        self.logger = logger
    }

    /// Writes `formats` of `report` to `outputDirectory/<report.folderName>/revenue.<format>`;
    /// returns the paths written.
    public func write(_ report: RevenueReport, formats: [ReportFormat]) throws -> [String] {
        let folder = (outputDirectory as NSString).appendingPathComponent(report.folderName)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ReportError(.writeFailed, "cannot create the folder \(folder): \(Self.reason(error))")
        }
        var written: [String] = []
        for format in formats {
            let path = (folder as NSString).appendingPathComponent(format.fileName)
            try Self.writeAtomically(Array(format.render(report).utf8), to: path)
            logger.debug("wrote report file", metadata: ["path": "\(path)"])
            written.append(path)
        }
        return written
    }

    /// Temporary file beside `path`, write, fsync, rename, fsync the folder.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = (folder as NSString).appendingPathComponent(
            ".\((path as NSString).lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw ReportError(.writeFailed, "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        var failure: String?
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    failure = String(cString: strerror(errno))
                    return
                }
                offset += count
            }
        }
        if failure == nil, fsync(descriptor) != 0 { failure = String(cString: strerror(errno)) }
        close(descriptor)
        if failure == nil, rename(temporary, path) != 0 { failure = String(cString: strerror(errno)) }
        if let failure {
            unlink(temporary)
            throw ReportError(.writeFailed, "cannot write \(path): \(failure)")
        }
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            _ = fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }

    private static func reason(_ error: any Error) -> String {
        (error as NSError).localizedDescription
    }
}
