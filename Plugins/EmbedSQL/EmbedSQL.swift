import Foundation
import PackagePlugin

/// Embeds `sql/migrations/*.sql` into the target as Swift source at build time, so the built
/// binary carries its schema and never reads files relative to the current directory.
@main
struct EmbedSQL: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let directory = context.package.directoryURL.appending(path: "sql/migrations")
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) SQL migrations",
                executable: try context.tool(named: "EmbedSQLTool").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files + [directory],
                outputFiles: [output]
            )
        ]
    }
}
