// swift-tools-version:6.2
import PackageDescription

// A package of its own, so the main package's build and `make test` do not grow: the peer issue 30
// measures myinfo against (docs/benchmarks.md, "The myinfo peer"). `scripts/bench.sh` builds it.
let package = Package(
    name: "MyinfoPeer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "myinfo-peer", targets: ["MyinfoPeer"])
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        // Already postgres-nio's (SCRAM); the document id is a SHA-256 of the uid, as ours.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // Already Hummingbird's and postgres-nio's; named because the peer imports them.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(
            name: "MyinfoPeer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        )
    ]
)
