import Foundation
import PackagePlugin

/// Writes the commit the package is built from into the target as Swift source (`embeddedBuildCommit`).
///
/// A prebuild command, not a build command: it runs on every build, so a new HEAD, a switched branch or
/// a working tree that became dirty are seen without listing git's files as inputs (a worktree's `.git`
/// is a file pointing elsewhere). The script rewrites its output only when the commit changed, so an
/// unchanged commit recompiles nothing.
@main
struct EmbedBuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let root = context.package.directoryURL
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildCommit")
        var environment: [String: String] = [:]
        if let commit = ProcessInfo.processInfo.environment["SHOPLEDGER_BUILD_COMMIT"] {
            environment["SHOPLEDGER_BUILD_COMMIT"] = commit
        }
        return [
            .prebuildCommand(
                displayName: "Embedding the build commit",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [root.appending(path: "scripts/build-commit.sh").path, root.path, output.path],
                environment: environment,
                outputFilesDirectory: output
            )
        ]
    }
}
