import Foundation

// Usage: EmbedSQLTool OUTPUT.swift FILE.sql...
// Writes `let embeddedMigrations: [(name: String, sql: String)]` with each file's exact text.

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

let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedSQLTool OUTPUT.swift FILE.sql...\n".utf8))
    exit(2)
}
var source = "// Generated at build time from sql/migrations by the EmbedSQL plugin. Do not edit.\n\n"
source += "let embeddedMigrations: [(name: String, sql: String)] = [\n"
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
