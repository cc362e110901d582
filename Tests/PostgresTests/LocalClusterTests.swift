import Foundation
import TestSupport
import Testing

/// The private cluster trusts every connection that reaches it: its socket folder must keep other
/// local users out.
@Suite("The private cluster's socket folder")
struct LocalClusterTests {
    @Test("is 0700, so only its owner (and root) can reach the trusting socket")
    func socketFolderIsPrivate() async throws {
        try await withTestDatabase { db in
            let host = try #require(
                db.url.split(separator: "?").last?.split(separator: "&").first { $0.hasPrefix("host=") }?.dropFirst(5))
            let attributes = try FileManager.default.attributesOfItem(atPath: String(host))
            let mode = try #require((attributes[.posixPermissions] as? NSNumber)?.intValue)
            #expect(mode & 0o777 == 0o700, "socket folder \(host) is \(String(mode & 0o777, radix: 8))")
        }
    }
}
