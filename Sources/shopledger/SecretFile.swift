import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif
// `struct stat` is declared by a header CDispatch includes too; which module the compiler credits it to
// depends on the order modules load in, so both are imported (MemberImportVisibility).
#if canImport(CDispatch)
import CDispatch
#endif

/// Files that hold secrets (the admin and metrics tokens, the stub secret, the App Store `.p8` key), read
/// as ssh reads a private key: refused when its group or others may read it, since then anyone with an
/// account on the host, or in the service's group, holds the secret too.
enum SecretFile {
    /// The file's text, trimmed of surrounding whitespace; at most `maxBytes`, private to its owner.
    static func read(_ path: String, what: String, maxBytes: Int = 4096) throws -> String {
        try checkPrivate(path, what: what)
        guard let data = FileManager.default.contents(atPath: path), data.count <= maxBytes else {
            throw ValidationError("Cannot read \(what) of at most \(maxBytes) bytes from \(path).")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Refuses a file that its group or others may read or write (following symbolic links, as the
    /// file read is the one they point to).
    static func checkPrivate(_ path: String, what: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw ValidationError("Cannot read \(what) from \(path): \(String(cString: strerror(errno))).")
        }
        let mode = Int(status.st_mode) & 0o777
        guard mode & 0o077 == 0 else {
            throw ValidationError(
                "\(what) file \(path) is readable by others than its owner (mode \(String(format: "%04o", mode))): "
                    + "a secret must be private to its owner. Run: chmod 600 \(path)")
        }
    }
}
