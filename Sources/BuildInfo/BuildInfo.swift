/// What this binary is: the release it belongs to and the commit it was built from. `shopledger --version`
/// prints both and `/metrics` exposes them (`shopledger_build_info`), so an operator can tell which code
/// a running server is, without the checkout it came from.
public enum BuildInfo {
    /// The release, set by hand when one is cut (CHANGELOG.md has an entry for each).
    public static let version = "0.10.0"

    /// The commit the binary was built from, captured at build time by the EmbedBuildCommit plugin:
    /// 12 hex digits, `-dirty` when the working tree had uncommitted changes, `unknown` outside a git
    /// checkout (a source tarball), or `SHOPLEDGER_BUILD_COMMIT` when it was set for the build.
    public static let commit = embeddedBuildCommit

    /// `0.9.0 (commit 0123456789ab)`: what `--version` prints.
    public static var description: String { "\(version) (commit \(commit))" }
}
