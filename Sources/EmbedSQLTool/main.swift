import Foundation

// Usage: EmbedSQLTool [--variable NAME] OUTPUT.swift FILE...
// Writes `let NAME: [(name: String, sql: String)]` (default NAME: embeddedMigrations) with each
// file's name and exact text.

func swiftLiteral(_ text: String) -> String {
    var literal = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\\": literal += "\\\\"
        case "\"": literal += "\\\""
        case "\n": literal += "\\n"
        case "\r": literal += "\\r"
        case "\t": literal += "\\t"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                literal += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                literal.unicodeScalars.append(scalar)
            }
        }
    }
    return literal + "\""
}

var arguments = CommandLine.arguments.dropFirst()
var variable = "embeddedMigrations"
if arguments.first == "--variable", arguments.count >= 2 {
    variable = arguments.dropFirst().first!
    arguments = arguments.dropFirst(2)
}
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedSQLTool [--variable NAME] OUTPUT.swift FILE...\n".utf8))
    exit(2)
}
var source = "// Generated at build time by the EmbedSQL or EmbedOpenAPI plugin. Do not edit.\n\n"
source += "let \(variable): [(name: String, sql: String)] = [\n"
for path in arguments.dropFirst() {
    let url = URL(fileURLWithPath: path)
    guard let text = try? String(contentsOf: url, encoding: .utf8) else {
        FileHandle.standardError.write(Data("EmbedSQLTool: \(path) is not readable UTF-8\n".utf8))
        exit(1)
    }
    source += "    (name: \(swiftLiteral(url.lastPathComponent)), sql: \(swiftLiteral(text))),\n"
}
source += "]\n"
do {
    try source.write(toFile: output, atomically: true, encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("EmbedSQLTool: cannot write \(output): \(error)\n".utf8))
    exit(1)
}
