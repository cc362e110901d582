import Foundation
import FuzzTargets

/// Without libFuzzer: runs each input file (or each file of each directory) once through the target and
/// prints what became of it. A crash or a broken invariant traps, with the Swift runtime's backtrace.
enum Replay {
    static func run(target: FuzzTarget, harness: FuzzHarness, paths: [String]) -> CInt {
        guard !paths.isEmpty else {
            FileHandle.standardError.write(Data("shopledger-fuzz: name the input files or directories\n".utf8))
            return 2
        }
        var count = 0
        for path in paths {
            for file in files(at: path) {
                guard let data = FileManager.default.contents(atPath: file) else {
                    FileHandle.standardError.write(Data("shopledger-fuzz: cannot read \(file)\n".utf8))
                    return 1
                }
                print("\(file): ", terminator: "")
                fflush(nil)  // the name shows even when the input traps
                print(harness.runBlocking(target, Array(data)))
                count += 1
            }
        }
        print("\(target.rawValue): replayed \(count) inputs")
        return 0
    }

    /// `path` itself, or the regular files in it (sorted, hidden ones left out).
    private static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return [path]
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { (path as NSString).appendingPathComponent($0) }
    }
}
