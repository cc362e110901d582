import Foundation
import FuzzTargets
import Testing

/// Every committed seed of every fuzz target, run once through the same harness `make fuzz` runs under
/// libFuzzer (uninstrumented here): no seed may trap, and the seeds named `valid-*` (`refused-*`) must be
/// accepted (refused), so that fuzzing starts from inputs that reach the deepest checks.
@Suite struct FuzzCorpusTests {
    @Test(arguments: FuzzTarget.allCases)
    func corpusReplays(_ target: FuzzTarget) async throws {
        let harness = try FuzzHarness(pki: try FuzzPKI.load())
        let files = FuzzFiles.inputs(in: FuzzFiles.corpus(target))
        #expect(!files.isEmpty, "no seeds in Fuzz/corpus/\(target.rawValue); make them with fuzz-seeds")
        for file in files {
            let bytes = Array(try Data(contentsOf: file))
            #expect(bytes.count <= target.maxLength, "\(file.lastPathComponent) is longer than -max_len")
            let outcome = await harness.run(target, bytes)
            let name = file.lastPathComponent
            if name.hasPrefix("valid-") {
                #expect(outcome == .accepted, "\(target.rawValue)/\(name) was \(outcome)")
            } else if name.hasPrefix("refused-") {
                #expect(outcome != .accepted, "\(target.rawValue)/\(name) was accepted")
            }
        }
    }
}

/// Where the fuzzing files are.
enum FuzzFiles {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz", isDirectory: true)
    }

    static func corpus(_ target: FuzzTarget) -> URL {
        root.appendingPathComponent("corpus/\(target.rawValue)", isDirectory: true)
    }

    static func regressions(_ target: FuzzTarget) -> URL {
        root.appendingPathComponent("regressions/\(target.rawValue)", isDirectory: true)
    }

    /// The files in `directory` (not hidden, not the README), sorted.
    static func inputs(in directory: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }.sorted()
            .map { directory.appendingPathComponent($0) }
    }
}
