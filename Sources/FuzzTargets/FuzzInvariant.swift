/// Checks a property every input must keep, whatever the fuzzer made of it. A violation traps, which
/// libFuzzer reports as a crash and saves the input of.
func invariant(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
    line: UInt = #line
) {
    if !condition() {
        preconditionFailure("fuzz invariant violated: \(message())", file: file, line: line)
    }
}
