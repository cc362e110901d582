import ArgumentParser
import Foundation

/// `SHOPLEDGER_*` environment variables, read in this one place, each parsed as strictly as its flag
/// (`SettingValue`): a value that is not what the setting takes stops the command with a
/// `ValidationError` naming the variable (exit 64, like a bad flag), never a silent default. An empty
/// variable counts as unset.
enum Environment {
    static func string(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// An integer in `range`; nil when unset.
    static func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = string(name) else { return nil }
        do {
            return try SettingValue.integer(text, in: range)
        } catch {
            throw ValidationError("\(name) \(error)")
        }
    }

    /// A number of seconds in `range`; nil when unset.
    static func seconds(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let text = string(name) else { return nil }
        do {
            return try SettingValue.seconds(text, in: range)
        } catch {
            throw ValidationError("\(name) \(error)")
        }
    }

    /// A switch (`1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`); false when unset.
    static func toggle(_ name: String) throws -> Bool {
        guard let text = string(name) else { return false }
        do {
            return try SettingValue.toggle(text)
        } catch {
            throw ValidationError("\(name) \(error)")
        }
    }

    /// One of `choices` (any case), as spelled there; nil when unset.
    static func choice(_ name: String, among choices: [String]) throws -> String? {
        guard let text = string(name) else { return nil }
        do {
            return try SettingValue.choice(text, among: choices)
        } catch {
            throw ValidationError("\(name) \(error)")
        }
    }
}

/// A setting given by its flag or, when the flag is absent, by its variable: checked against the same
/// range either way, the message naming whichever gave the value.
enum Setting {
    static func integer(
        _ flag: Int?, _ flagName: String, _ variable: String, in range: ClosedRange<Int>
    ) throws -> Int? {
        guard let flag else { return try Environment.integer(variable, in: range) }
        guard range.contains(flag) else {
            throw ValidationError(
                "\(flagName) must be an integer between \(range.lowerBound) and \(range.upperBound), got \(flag)")
        }
        return flag
    }

    /// Seconds from the flag or the variable, as a number (nil when neither is set).
    static func seconds(
        _ flag: Double?, _ flagName: String, _ variable: String, in range: ClosedRange<Double>
    ) throws -> Double? {
        guard let flag else { return try Environment.seconds(variable, in: range) }
        guard flag.isFinite, range.contains(flag) else {
            throw ValidationError("\(flagName) must be \(SettingValue.secondsExpectation(range)), got \(flag)")
        }
        return flag
    }

    /// Seconds from the flag, the variable or `fallback`, as a duration (milliseconds).
    static func duration(
        _ flag: Double?, _ flagName: String, _ variable: String, in range: ClosedRange<Double>,
        default fallback: Double
    ) throws -> Duration {
        let value = try seconds(flag, flagName, variable, in: range) ?? fallback
        return .milliseconds(Int64((value * 1000).rounded()))
    }

    /// A switch: on when the flag is given, else as the variable says.
    static func toggle(_ flag: Bool, _ variable: String) throws -> Bool {
        flag ? true : try Environment.toggle(variable)
    }
}
