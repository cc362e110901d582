import ArgumentParser
import Foundation
import Logging
import Synchronization
import Testing

@testable import shopledger

/// What ends a command: its exit status, and its message as a JSON line when JSON logging was asked for.
@Suite("FatalError: exit statuses, and fatal errors as JSON lines")
struct FatalErrorTests {
    @Test("exit statuses: 64 for settings, 69 for a service that did not answer, the command's own code")
    func statuses() {
        #expect(FatalError.outcome(of: ValidationError("SHOPLEDGER_PORT is bad")) == (64, "SHOPLEDGER_PORT is bad"))
        #expect(
            FatalError.outcome(of: ServiceUnavailable(description: "--google-certs-url: no answer"))
                == (69, "--google-certs-url: no answer"))
        #expect(FatalError.outcome(of: ExitCode(1)) == (1, nil))
        #expect(FatalError.outcome(of: CleanExit.message("hi")).status == 0)
    }

    @Test("logged as one critical JSON line with its exit status")
    func jsonLine() throws {
        let lines = JSONLogHandlerTests.Lines()
        let handler = JSONLogHandler(label: "shopledger", metadataProvider: nil) { bytes in
            lines.lines.withLock { $0.append(bytes) }
        }
        let logger = Logger(label: "shopledger") { _ in handler }
        let status = FatalError.log(
            ValidationError("SHOPLEDGER_PROT is not a setting of shopledger; did you mean SHOPLEDGER_PORT?"), to: logger
        )
        #expect(status == 64)
        #expect(lines.all.count == 1)
        let line = try #require(lines.all.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        #expect(object["level"] as? String == "critical")
        #expect(
            object["message"] as? String
                == "SHOPLEDGER_PROT is not a setting of shopledger; did you mean SHOPLEDGER_PORT?")
        #expect(object["exit_status"] as? String == "64")
        #expect(object["label"] as? String == "shopledger")

        #expect(FatalError.log(ExitCode(1), to: logger) == 1)
        #expect(lines.all.count == 1, "a command that printed its verdict gets no line")
        #expect(FatalError.log(CleanExit.helpRequest(), to: logger) == nil)
        #expect(lines.all.count == 1, "--help is no failure")
    }
}
