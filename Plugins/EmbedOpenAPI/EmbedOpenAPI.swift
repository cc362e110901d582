import Foundation
import PackagePlugin

/// Embeds `docs/openapi.yaml` into the target as Swift source at build time, so the server serves the
/// document kept in the repo without reading files relative to the current directory.
@main
struct EmbedOpenAPI: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let document = context.package.directoryURL.appending(path: "docs/openapi.yaml")
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedOpenAPI.swift")
        return [
            .buildCommand(
                displayName: "Embedding docs/openapi.yaml",
                executable: try context.tool(named: "EmbedSQLTool").url,
                arguments: ["--variable", "embeddedOpenAPIDocuments", output.path, document.path],
                inputFiles: [document],
                outputFiles: [output]
            )
        ]
    }
}
