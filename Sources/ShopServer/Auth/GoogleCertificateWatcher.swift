import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Keeps a ``GoogleCertificateStore`` in step with its file: Google rotates its securetoken keys every
/// few days and the operator's job rewrites the file, so the file is checked every `interval` (its
/// inode, size and modification time) and re-read when it changed, and re-read at once on SIGHUP.
/// A new file that cannot be used (unreadable, not JSON, no usable key) keeps the keys in use, and
/// the log says why; it is tried again when it changes again (or on the next SIGHUP).
struct GoogleCertificateWatcher: Service {
    let store: GoogleCertificateStore
    let interval: Duration
    let logger: Logger

    func run() async throws {
        guard let path = store.path else { return }
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        logger.info(
            "watching the Google certificate file", metadata: ["path": "\(path)", "interval": "\(interval)"])
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await checkPeriodically(path) }
                group.addTask {
                    for await _ in hangups { reload(path, because: "SIGHUP") }
                }
            }
        }
    }

    private func checkPeriodically(_ path: String) async {
        var seen = FileFingerprint(path: path)
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            let now = FileFingerprint(path: path)
            guard now != seen else { continue }
            seen = now
            reload(path, because: "the file changed")
        }
    }

    private func reload(_ path: String, because reason: String) {
        do {
            let keys = try store.reload()
            logger.notice(
                "reloaded the Google certificate file",
                metadata: ["path": "\(path)", "reason": "\(reason)", "keys": "\(keys.keyIDs.joined(separator: ","))"])
        } catch {
            logger.warning(
                "the Google certificate file cannot be used; keeping the keys in use",
                metadata: ["path": "\(path)", "reason": "\(reason)", "error": "\(error.description)"])
        }
    }
}

/// What tells a rewritten or replaced file from the one read before, without reading it.
struct FileFingerprint: Equatable {
    let fileNumber: UInt64?
    let size: UInt64?
    let modified: Date?

    init(path: String) {
        let attributes = (try? FileManager.default.attributesOfItem(atPath: path)) ?? [:]
        fileNumber = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value
        size = (attributes[.size] as? NSNumber)?.uint64Value
        modified = attributes[.modificationDate] as? Date
    }
}
