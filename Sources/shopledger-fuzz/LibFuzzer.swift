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
/// structure-aware ``DERMutator`` (which mutates a node with libFuzzer's mutator and fixes the DER lengths);
/// every other target libFuzzer's mutator, as without it.
@_cdecl("LLVMFuzzerCustomMutator")
func customMutator(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int, _ seed: UInt32) -> Int {
    guard LibFuzzer.target == .classicReceipt else { return LLVMFuzzerMutate(data, size, maxSize) }
    let mutated = DERMutator.mutate(Array(UnsafeBufferPointer(start: data, count: size)), maxSize: maxSize, seed: seed)
    {
        input, limit in
        var buffer = input + [UInt8](repeating: 0, count: max(limit, 1) - input.count)
        let count = buffer.withUnsafeMutableBufferPointer { LLVMFuzzerMutate($0.baseAddress!, input.count, limit) }
        return Array(buffer.prefix(count))
    }
    mutated.withUnsafeBufferPointer { data.update(from: $0.baseAddress!, count: mutated.count) }
    return mutated.count
}

/// Runs libFuzzer on one target. Its callback is a C function pointer that captures nothing, so the target
/// and harness are handed over in statics.
enum LibFuzzer {
    // Written once before libFuzzer starts, only read afterwards (on libFuzzer's thread).
    nonisolated(unsafe) static var target = FuzzTarget.classicReceipt
    nonisolated(unsafe) private static var harness: FuzzHarness?

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
