#if SHOPLEDGER_LIBFUZZER
import FuzzTargets
import Foundation

/// libFuzzer's entry point for programs that have a `main` of their own (libFuzzer's `FuzzerInterface.h`).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// libFuzzer's own mutator, for a custom mutator to call.
@_silgen_name("LLVMFuzzerMutate")
private func LLVMFuzzerMutate(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int) -> Int

/// libFuzzer calls this, when it is defined, instead of its own mutations: classic receipts get the
/// structure-aware ``DERMutator``, JWS files ``JWSMutator`` (both mutate one part with libFuzzer's mutator and
/// keep the structure right); the other targets libFuzzer's mutator, as without it.
@_cdecl("LLVMFuzzerCustomMutator")
func customMutator(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int, _ seed: UInt32) -> Int {
    let structured: ([UInt8], Int, UInt32, ([UInt8], Int) -> [UInt8]) -> [UInt8]
    switch LibFuzzer.target {
    case .classicReceipt: structured = DERMutator.mutate
    case .signedTransaction, .notification, .firebaseToken: structured = JWSMutator.mutate
    case .stubReceipt, .formBody, .jsonBody: return LLVMFuzzerMutate(data, size, maxSize)
    }
    let mutated = structured(Array(UnsafeBufferPointer(start: data, count: size)), maxSize, seed) { input, limit in
        guard !input.isEmpty else { return [UInt8(truncatingIfNeeded: seed)] }
        var buffer = input + [UInt8](repeating: 0, count: max(limit, input.count, 1) - input.count)
        let count = buffer.withUnsafeMutableBufferPointer {
            LLVMFuzzerMutate($0.baseAddress!, input.count, max(limit, 1))
        }
        return Array(buffer.prefix(count))
    }
    guard !mutated.isEmpty, mutated.count <= maxSize else { return LLVMFuzzerMutate(data, size, maxSize) }
    mutated.withUnsafeBufferPointer { data.update(from: $0.baseAddress!, count: mutated.count) }
    return mutated.count
}

/// Runs libFuzzer on one target. Its callback is a C function pointer that captures nothing, so the target
/// and harness are handed over in statics.
enum LibFuzzer {
    // Written once before libFuzzer starts, only read afterwards (on libFuzzer's thread).
    nonisolated(unsafe) static var target = FuzzTarget.classicReceipt
    nonisolated(unsafe) private static var harness: FuzzHarness?

    /// Starts this program again without the Swift runtime's backtracer, unless it already is. The
    /// backtracer handles a trap's SIGILL first, and libFuzzer leaves a signal handler it finds in place, so
    /// a crash would end the process before libFuzzer saved the input. Without it libFuzzer handles the
    /// signal, and the runtime still prints the fatal error with a short stack. `-fork` jobs inherit it.
    static func withoutSwiftBacktracer() {
        guard ProcessInfo.processInfo.environment["SWIFT_BACKTRACE"] != "enable=no" else { return }
        setenv("SWIFT_BACKTRACE", "enable=no", 1)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        // Only returns when it failed: fuzz on, a crash is then counted but not saved.
        FileHandle.standardError.write(Data("shopledger-fuzz: could not restart without the backtracer\n".utf8))
    }

    /// `arguments` as libFuzzer takes them (program name, flags, corpus directories); `-max_len` defaults to
    /// the target's ``FuzzTarget/maxLength``.
    static func run(target: FuzzTarget, harness: FuzzHarness, arguments: [String]) -> CInt {
        Self.target = target
        Self.harness = harness
        var arguments = arguments
        if !arguments.contains(where: { $0.hasPrefix("-max_len=") }) {
            arguments.insert("-max_len=\(target.maxLength)", at: 1)
        }
        var argc = CInt(arguments.count)
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: arguments.count + 1)
        for (index, argument) in arguments.enumerated() { argv[index] = strdup(argument) }
        argv[arguments.count] = nil
        var argvPointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
        return LLVMFuzzerRunDriver(&argc, &argvPointer) { data, size in
            let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
            LibFuzzer.harness?.runBlocking(LibFuzzer.target, bytes)
            return 0
        }
    }
}
#endif
