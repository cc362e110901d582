import Foundation
import FuzzTargets

// shopledger-fuzz: the fuzz targets' driver (docs/testing.md, "Fuzzing").
//
//   shopledger-fuzz --list                          each target and its -max_len
//   shopledger-fuzz TARGET [libFuzzer flags] [CORPUS_DIR...]   built with -sanitize=fuzzer (make fuzz)
//   shopledger-fuzz TARGET FILE_OR_DIR...            otherwise: runs each input once and says what became of it
//
// The target may also come from SHOPLEDGER_FUZZ_TARGET; libFuzzer's -fork children inherit it from there.

let usage = """
    usage: shopledger-fuzz TARGET [libFuzzer flags] [CORPUS...]   (instrumented build)
           shopledger-fuzz TARGET FILE_OR_DIRECTORY...            (replays inputs)
           shopledger-fuzz --list
    targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))
    """

#if SHOPLEDGER_LIBFUZZER
LibFuzzer.withoutSwiftBacktracer()
#endif

var arguments = CommandLine.arguments
if arguments.count > 1, arguments[1] == "--list" {
    for target in FuzzTarget.allCases { print(target.rawValue, target.maxLength) }
    exit(0)
}
let targetName: String
if arguments.count > 1, FuzzTarget(rawValue: arguments[1]) != nil {
    targetName = arguments.remove(at: 1)
    setenv("SHOPLEDGER_FUZZ_TARGET", targetName, 1)
} else if let named = ProcessInfo.processInfo.environment["SHOPLEDGER_FUZZ_TARGET"], !named.isEmpty {
    targetName = named
} else {
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}
guard let target = FuzzTarget(rawValue: targetName) else {
    FileHandle.standardError.write(Data("unknown target \(targetName)\n\(usage)\n".utf8))
    exit(2)
}
let harness: FuzzHarness
do {
    harness = try FuzzHarness(pki: try FuzzPKI.load())
} catch {
    FileHandle.standardError.write(Data("shopledger-fuzz: \(error)\n".utf8))
    exit(1)
}

#if SHOPLEDGER_LIBFUZZER
exit(LibFuzzer.run(target: target, harness: harness, arguments: arguments))
#else
exit(Replay.run(target: target, harness: harness, paths: Array(arguments.dropFirst())))
#endif
