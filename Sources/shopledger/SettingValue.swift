import Foundation

/// Strict parsing of one setting's text, as an environment variable gives it: a value that is not what
/// the setting takes is an error saying what it takes, never a silent default (`SHOPLEDGER_DEV_AUTH=maybe`
/// must not quietly mean off, nor `SHOPLEDGER_PORT=abc` the default port). The CLI names the flag or the
/// variable the text came from; this only says what was wrong with it.
public enum SettingValue {
    /// What a setting takes, e.g. "an integer between 1 and 65535", and the text it got.
    public struct Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        public let expected: String
        public let got: String

        public init(expected: String, got: String) {
            self.expected = expected
            self.got = got
        }

        /// "must be an integer between 1 and 65535, got \"abc\"" (the text cut to 40 characters).
        public var description: String { "must be \(expected), got \(String(got.prefix(40)).debugDescription)" }
    }

    /// Words that turn a switch on or off, in any case.
    public static let onWords: Set<String> = ["1", "true", "yes", "on"]
    public static let offWords: Set<String> = ["0", "false", "no", "off"]

    /// A decimal integer in `range` (surrounding spaces allowed; no fraction, no exponent, no hexadecimal).
    public static func integer(_ text: String, in range: ClosedRange<Int>) throws(Invalid) -> Int {
        guard let value = Int(trimmed(text)), range.contains(value) else {
            throw Invalid(expected: "an integer between \(range.lowerBound) and \(range.upperBound)", got: text)
        }
        return value
    }

    /// A finite decimal number of seconds in `range` (`1`, `0.5`, `2.5e1`; not `inf`, `nan` or `1s`).
    public static func seconds(_ text: String, in range: ClosedRange<Double>) throws(Invalid) -> Double {
        let digits = trimmed(text)
        // Double(_:) also takes "inf", "nan" and hexadecimal floats: only digits, a point and an exponent pass.
        let allowed = digits.allSatisfy { $0.isASCII && ($0.isNumber || ".eE+-".contains($0)) }
        guard allowed, let value = Double(digits), value.isFinite, range.contains(value) else {
            throw Invalid(expected: secondsExpectation(range), got: text)
        }
        return value
    }

    /// "a number of seconds between 0.1 and 600".
    public static func secondsExpectation(_ range: ClosedRange<Double>) -> String {
        "a number of seconds between \(number(range.lowerBound)) and \(number(range.upperBound))"
    }

    /// A switch: `1`, `true`, `yes`, `on` or `0`, `false`, `no`, `off`, in any case. Anything else
    /// (`maybe`, `enabled`) is an error, not off.
    public static func toggle(_ text: String) throws(Invalid) -> Bool {
        let word = trimmed(text).lowercased()
        if onWords.contains(word) { return true }
        if offWords.contains(word) { return false }
        throw Invalid(expected: "1, true, yes or on, or 0, false, no or off", got: text)
    }

    /// One of `choices` (compared in any case); returns the choice as spelled in `choices`.
    public static func choice(_ text: String, among choices: [String]) throws(Invalid) -> String {
        let word = trimmed(text).lowercased()
        guard let choice = choices.first(where: { $0.lowercased() == word }) else {
            throw Invalid(expected: "one of \(choices.joined(separator: ", "))", got: text)
        }
        return choice
    }

    private static func trimmed(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespaces)
    }

    /// 600 rather than 600.0; 0.01 as written.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
