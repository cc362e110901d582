import Testing

@testable import shopledger

/// The strict parsers behind every `SHOPLEDGER_*` variable: what each takes, and that anything else is
/// an error saying what it takes rather than a silent default.
@Suite("SettingValue: strict parsing of settings")
struct SettingValueTests {
    @Test(
        "integers",
        arguments: [
            ("8080", 1...65535, 8080), (" 443 ", 1...65535, 443), ("1", 1...65535, 1), ("65535", 1...65535, 65535),
            ("-3", -5...5, -3),
        ] as [(String, ClosedRange<Int>, Int)])
    func integers(text: String, range: ClosedRange<Int>, expected: Int) throws {
        #expect(try SettingValue.integer(text, in: range) == expected)
    }

    @Test(
        "not integers, or out of range",
        arguments: ["abc", "", "0", "65536", "80.0", "1e3", "0x50", "8080 80", "99999999999999999999", "+-1"])
    func badIntegers(text: String) {
        #expect(throws: SettingValue.Invalid(expected: "an integer between 1 and 65535", got: text)) {
            try SettingValue.integer(text, in: 1...65535)
        }
    }

    @Test(
        "seconds",
        arguments: [("10", 10), ("0.5", 0.5), (" 600 ", 600), ("2.5e1", 25), ("0.001", 0.001)] as [(String, Double)])
    func seconds(text: String, expected: Double) throws {
        #expect(try SettingValue.seconds(text, in: 0.001...600) == expected)
    }

    @Test(
        "not seconds, or out of range",
        arguments: ["-1", "0", "601", "10s", "inf", "nan", "infinity", "0x1p3", "", "ten", "1,5"])
    func badSeconds(text: String) {
        #expect(throws: SettingValue.Invalid(expected: "a number of seconds between 0.001 and 600", got: text)) {
            try SettingValue.seconds(text, in: 0.001...600)
        }
    }

    @Test(
        "switches",
        arguments: [
            ("1", true), ("true", true), ("TRUE", true), ("yes", true), ("On", true), (" on ", true),
            ("0", false), ("false", false), ("No", false), ("OFF", false),
        ])
    func toggles(text: String, expected: Bool) throws {
        #expect(try SettingValue.toggle(text) == expected)
    }

    @Test("not switches: maybe is not off", arguments: ["maybe", "enabled", "2", "", "y", "t", "onn", "-1"])
    func badToggles(text: String) {
        #expect(throws: SettingValue.Invalid(expected: "1, true, yes or on, or 0, false, no or off", got: text)) {
            try SettingValue.toggle(text)
        }
    }

    @Test("choices, in any case, answered as spelled")
    func choices() throws {
        #expect(try SettingValue.choice("SANDBOX", among: ["production", "sandbox"]) == "sandbox")
        #expect(try SettingValue.choice("production", among: ["production", "sandbox"]) == "production")
        #expect(throws: SettingValue.Invalid(expected: "one of production, sandbox", got: "staging")) {
            try SettingValue.choice("staging", among: ["production", "sandbox"])
        }
    }

    @Test("the message says what the setting takes and quotes what it got, cut to 40 characters")
    func message() {
        let long = String(repeating: "x", count: 100)
        let invalid = SettingValue.Invalid(expected: "an integer between 1 and 65535", got: long)
        #expect(
            invalid.description
                == "must be an integer between 1 and 65535, got \"\(String(repeating: "x", count: 40))\"")
        #expect(
            SettingValue.Invalid(expected: "x", got: "a\nb").description == #"must be x, got "a\nb""#,
            "a line break is shown escaped, never breaking the message")
    }
}
