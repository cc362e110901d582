import Foundation
import TestSupport
import Testing

@testable import shopledger

/// `serve`'s side of systemd's `Type=notify`, against a real unix datagram socket standing in for systemd's.
@Suite("SystemdNotifier: READY=1 and STOPPING=1 to $NOTIFY_SOCKET")
struct SystemdNotifierTests {
    @Test("nothing to tell without NOTIFY_SOCKET (not started by systemd as Type=notify)")
    func notAskedFor() {
        #expect(SystemdNotifier(environment: [:]) == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]) == nil)
    }

    @Test("one datagram per notification to a socket at a path, as sent")
    func pathSocket() throws {
        let folder = FileManager.default.temporaryDirectory.path + "/notify-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let systemd = try NotifySocket(path: folder + "/notify")
        defer { systemd.close() }
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": systemd.address]))
        try notifier.notify("READY=1\nSTATUS=serving on http://127.0.0.1:8080")
        try notifier.notify("STOPPING=1")
        #expect(systemd.receive(timeout: .seconds(2)) == "READY=1\nSTATUS=serving on http://127.0.0.1:8080")
        #expect(systemd.receive(timeout: .seconds(2)) == "STOPPING=1")
        #expect(systemd.receive(timeout: .milliseconds(100)) == nil)
    }

    @Test("a socket in the abstract namespace (NOTIFY_SOCKET=@name)")
    func abstractSocket() throws {
        let systemd = try NotifySocket(abstractName: "shopledger-notify-test-\(UUID().uuidString)")
        defer { systemd.close() }
        #expect(systemd.address.hasPrefix("@"))
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": systemd.address]))
        try notifier.notify("READY=1")
        #expect(systemd.receive(timeout: .seconds(2)) == "READY=1")
    }

    @Test("a socket nobody listens on, or an address that is not one, is an error naming NOTIFY_SOCKET")
    func failures() throws {
        let missing = FileManager.default.temporaryDirectory.path + "/no-such-notify-\(UUID().uuidString)"
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": missing]))
        #expect {
            try notifier.notify("READY=1")
        } throws: {
            "\($0)".contains("NOTIFY_SOCKET \(missing)") && "\($0)".contains("No such file")
        }
        for address in ["relative/notify", "/" + String(repeating: "x", count: 200)] {
            let bad = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": address]))
            #expect(throws: SystemdNotifier.Failure.self) { try bad.notify("READY=1") }
        }
    }
}
