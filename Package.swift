// swift-tools-version:6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

// Linux only: the Postgres module's reactor waits for libpq's sockets with epoll (Sources/CLibPQ/shim.h),
// and the system libraries come from Debian's packages. No `platforms:` is declared, since declaring macOS
// would promise a build that cannot succeed there.
let package = Package(
    name: "ShopLedger",
    products: [
        .executable(name: "shopledger", targets: ["shopledger"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // The HTTP parts Hummingbird's channel handlers see (ShopServer's connection limits).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // Tests only: reads the reports' CSV back with a real RFC 4180 parser.
        .package(url: "https://github.com/yaslab/CSV.swift.git", from: "2.5.2"),
        // The App Store Server API client; FaultTests also drive the real `shopledger serve` with it.
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Tests only: FaultTests' HTTPS client trusts the test's self-signed certificate and nothing else.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        // libpq, from Debian's libpq-dev (pkg-config name "libpq").
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // zlib, from Debian's zlib1g-dev: AppleSales inflates Apple's gzip'd sales reports with it, and the
        // HTML report's browser test decodes the screenshot PNG with it.
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // The version and the commit the binary was built from (`--version`, `shopledger_build_info`).
        .target(name: "BuildInfo", swiftSettings: strict, plugins: ["EmbedBuildCommit"]),
        // Civil dates (the proleptic Gregorian calendar, no time zone): the one days-from-civil
        // algorithm the database layer, the receipts and the reports share.
        .target(name: "CivilDates", swiftSettings: strict),
        // Our libpq wrapper: connections, pool, bindings, rows, errors, transactions, COPY,
        // migrations runner and a private local cluster. Knows nothing of the shop.
        .target(
            name: "Postgres",
            dependencies: [
                "CLibPQ",
                "CivilDates",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Proving purchases: stub receipts, App Store signed transactions and notifications.
        // No database, no network.
        .target(
            name: "Receipts",
            dependencies: [
                "CivilDates",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            exclude: ["STUB-RECEIPTS.md"],
            swiftSettings: strict
        ),
        // Apple's App Store Server API: signed bearer tokens, retries, rate limits, pagination; every
        // signed payload it receives goes through the Receipts verifier. No database.
        .target(
            name: "AppStoreServerAPI",
            dependencies: [
                "Receipts",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Google Play's Developer API for one app's one-time products: a service account's RS256 assertion
        // exchanged for access tokens, purchases get/acknowledge/consume, voided purchases, retries and
        // quota; the real-time developer notifications' shapes. No database.
        .target(
            name: "GooglePlay",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The shop's domain and its store: catalog, users, purchases, journal, grants, refunds.
        .target(
            name: "Ledger",
            dependencies: [
                "Postgres",
                "Receipts",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict,
            plugins: ["EmbedSQL"]
        ),
        // The shop's work that knows no HTTP: proving and recording purchases (PurchaseDesk), per-user
        // limits, the App Store sync and test-notification probe. `serve` and `shopledger appstore` share it.
        .target(
            name: "Shop",
            dependencies: [
                // Google Play's alpha-2 region codes as StoreKit's alpha-3 storefronts (StorefrontCountries).
                "AppleSales",
                "AppStoreServerAPI",
                "GooglePlay",
                "Ledger",
                "Receipts",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The JSON of each concept both front ends show (webhook endpoints, the catalog, purchases and
        // support actions): the admin API answers it and `--json` prints it, in one encoding, one null rule.
        .target(
            name: "APIViews",
            dependencies: ["Ledger", "Receipts", "Webhooks"],
            swiftSettings: strict
        ),
        // HTTP: SeSAC-compatible routes, the JSON API, notifications, auth.
        .target(
            name: "ShopServer",
            dependencies: [
                "APIViews",
                "AppStoreServerAPI",
                "BuildInfo",
                "GooglePlay",
                "Ledger",
                "Postgres",
                "Receipts",
                "Shop",
                // The webhook delivery worker and /api/v1/admin/webhooks.
                "Webhooks",
                // Google's certificates fetched from their URL (--google-certs-url).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // Its HTTP/1 child channel, wrapped (ShopHTTP1Channel).
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict,
            plugins: ["EmbedOpenAPI"]
        ),
        // The operators' console (`serve --console-port`, docs/console.md): operators and their sessions,
        // server-rendered pages in Korean and English over the same domain services as the API and CLI.
        .target(
            name: "Console",
            dependencies: [
                "APIViews",
                "AppleSales",
                "AppStoreServerAPI",
                "BuildInfo",
                "CivilDates",
                "Ledger",
                "Postgres",
                "Receipts",
                "Reports",
                "Webhooks",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                // scrypt for operators' passwords.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Outbound webhooks: the outbox the ledger's triggers fill (migration 0016), endpoints, replays,
        // and the delivery worker `serve` runs (signed posts, retries, SKIP LOCKED claims).
        .target(
            name: "Webhooks",
            dependencies: [
                "Postgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // getaddrinfo on NIO's thread pool; TLS errors told apart from connection errors.
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // Apple's daily Summary Sales Reports: the parser (gzip'd or plain, columns by header name), the
        // append-only import, and the comparison with the ledger (`shopledger apple sales import`,
        // `shopledger reconcile apple`, the daily report's "Apple says"). No network.
        .target(
            name: "AppleSales",
            dependencies: [
                "CivilDates",
                "CZlib",
                "Postgres",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Revenue reports from the ledger: figures per day, item and currency, as CSV and Markdown;
        // the "report totals equal ledger totals" check.
        .target(
            name: "Reports",
            dependencies: [
                // The daily report's "Apple says" section.
                "AppleSales",
                "CivilDates",
                "Ledger",
                "Postgres",
                "Receipts",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Synthetic purchases written through COPY as the ledger itself writes them, for benchmarks
        // and demos (`shopledger seed`).
        .target(
            name: "Seeding",
            dependencies: [
                "CivilDates",
                "Ledger",
                "Postgres",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "shopledger",
            dependencies: [
                "APIViews",
                "AppleSales",
                "AppStoreServerAPI",
                "BuildInfo",
                "Console",
                "GooglePlay",
                "Shop",
                "ShopServer",
                "Ledger",
                "Reports",
                "Seeding",
                "CivilDates",
                "Postgres",
                "Receipts",
                "Webhooks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // `smoke` signs its forged proofs.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // Build-time embedding of sql/migrations into the Ledger module, so the binary never
        // depends on the current directory.
        .executableTarget(name: "EmbedSQLTool", path: "Sources/EmbedSQLTool"),
        .plugin(name: "EmbedSQL", capability: .buildTool(), dependencies: ["EmbedSQLTool"]),
        // The same for docs/openapi.yaml into ShopServer, which serves it at /openapi.yaml.
        .plugin(name: "EmbedOpenAPI", capability: .buildTool(), dependencies: ["EmbedSQLTool"]),
        // The git commit into BuildInfo, before every build (scripts/build-commit.sh).
        .plugin(name: "EmbedBuildCommit", capability: .buildTool()),

        // Coverage-guided fuzzing (docs/testing.md, "Fuzzing"): the targets, and the libFuzzer driver that also
        // replays corpus files when built without `-sanitize=fuzzer`.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "Receipts",
                "ShopServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "shopledger-fuzz", dependencies: ["FuzzTargets"], swiftSettings: strict),

        // Benchmarks (`make bench`): figures, not pass/fail tests.
        .executableTarget(
            name: "PostgresBench", dependencies: ["BenchSupport", "Postgres"], path: "Benchmarks/PostgresBench",
            swiftSettings: strict),
        .target(
            name: "BenchSupport",
            dependencies: ["Ledger", "Postgres", "Receipts"],
            path: "Benchmarks/BenchSupport", swiftSettings: strict),
        .executableTarget(
            name: "LedgerBench",
            dependencies: [
                "BenchSupport", "Ledger", "Postgres", "Receipts", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/LedgerBench", swiftSettings: strict),
        .executableTarget(
            name: "ReceiptsBench",
            dependencies: [
                "Receipts",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Benchmarks/ReceiptsBench", swiftSettings: strict),
        .executableTarget(
            name: "ReportsBench",
            dependencies: [
                "Reports", "Seeding", "CivilDates", "Ledger", "Postgres",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/ReportsBench", swiftSettings: strict),
        .executableTarget(
            name: "ConsoleBench",
            dependencies: [
                "BenchSupport", "Seeding", "CivilDates", "Ledger", "Postgres", "Receipts", "Reports",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/ConsoleBench", swiftSettings: strict),

        .executableTarget(
            name: "LoadBench",
            dependencies: [
                "BenchSupport", "TestSupport", "Ledger", "Receipts", "Postgres",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/LoadBench", swiftSettings: strict),

        .target(
            name: "TestSupport",
            dependencies: [
                "Postgres", "Ledger", "Receipts", "Webhooks", .product(name: "Logging", package: "swift-log"),
                // The fake Google Play (FakeGooglePlay) serves on loopback.
                .product(name: "NIOCore", package: "swift-nio"),
                // The webhook receiver WebhooksTests and FaultTests post to.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: strict
        ),
        // Makes the fuzz PKI and the seed corpora from the test PKIs; run by hand (docs/testing.md, "Fuzzing").
        .executableTarget(
            name: "fuzz-seeds",
            dependencies: [
                "FuzzTargets", "Receipts", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/FuzzSeeds", swiftSettings: strict),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "ReceiptsTests",
            dependencies: [
                "Receipts", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ], swiftSettings: strict),
        // The calendar arithmetic, against Foundation's Gregorian calendar. No database.
        .testTarget(name: "CivilDatesTests", dependencies: ["CivilDates"], swiftSettings: strict),
        .testTarget(name: "LedgerTests", dependencies: ["Ledger", "Postgres", "TestSupport"], swiftSettings: strict),
        // Shop's logic without HTTP: the per-user token buckets, request budgets. No database.
        .testTarget(name: "ShopTests", dependencies: ["Shop"], swiftSettings: strict),
        // The command line's own helpers: strict setting parsing, the JSON log handler, systemd's notifications.
        .testTarget(
            name: "CLITests",
            dependencies: [
                "shopledger", "TestSupport", .product(name: "Logging", package: "swift-log"),
                // serve's Google Play settings, as built from its flags.
                "GooglePlay", "ShopServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),
        // The synthetic ledger (deterministic per seed) and the seeder, against a real PostgreSQL, every
        // reconciliation check after.
        .testTarget(
            name: "SeedingTests",
            dependencies: ["Seeding", "CivilDates", "Ledger", "Postgres", "Receipts", "Reports", "TestSupport"],
            swiftSettings: strict),
        // The Summary Sales Report parser, import and comparison, against a real PostgreSQL, with
        // reports generated from the ledger's own rows.
        .testTarget(
            name: "AppleSalesTests",
            dependencies: [
                "AppleSales", "CivilDates", "CZlib", "Ledger", "Postgres", "Receipts", "Reports", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ], swiftSettings: strict),
        .testTarget(
            name: "ReportsTests",
            dependencies: [
                "Reports", "Seeding", "CivilDates", "Ledger", "Postgres", "Receipts", "TestSupport", "CZlib",
                .product(name: "CSV", package: "CSV.swift"),
            ], swiftSettings: strict),
        .testTarget(
            name: "ShopServerTests",
            dependencies: [
                "APIViews", "Shop", "ShopServer", "Ledger", "TestSupport", "Webhooks",
                // The reconciliation list `serve` passes to the admin API (ServerHooks).
                "Reports",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Yams", package: "Yams"),
            ], swiftSettings: strict),
        // The App Store Server API client against a fake Apple on loopback, and its uses (restore,
        // sync) against a real PostgreSQL.
        .testTarget(
            name: "AppStoreServerAPITests",
            dependencies: [
                "Console",
                "AppStoreServerAPI", "CivilDates", "Shop", "ShopServer", "Ledger", "Postgres", "Receipts", "Reports",
                "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ], swiftSettings: strict),
        // The Google Play client against the fake Google on loopback; the Play purchase, refund and push
        // paths against it and a real PostgreSQL.
        .testTarget(
            name: "GooglePlayTests",
            dependencies: [
                "GooglePlay", "Shop", "ShopServer", "Ledger", "Postgres", "Receipts", "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ], swiftSettings: strict),
        // Webhooks against a real PostgreSQL and a real receiver on loopback that checks every signature.
        .testTarget(
            name: "WebhooksTests",
            dependencies: [
                "Webhooks", "Ledger", "Postgres", "Receipts", "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ], swiftSettings: strict),
        // Every committed fuzz corpus replayed once, uninstrumented; every saved crash replayed in a process of its own.
        .testTarget(
            name: "ConsoleTests",
            dependencies: [
                "AppleSales", "CivilDates", "Console", "Ledger", "Postgres", "Receipts", "Reports", "TestSupport",
                "Webhooks",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzTargets"], swiftSettings: strict),
        // Fault tests (`make test-faults`; a fast subset runs in `make test`): spawn the built
        // `shopledger serve` against a private cluster, kill it, stop PostgreSQL under load, SIGTERM.
        .testTarget(
            name: "FaultTests",
            dependencies: [
                "Ledger", "Postgres", "Receipts", "TestSupport", "Webhooks",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // The floods' thousands of connections (FloodTests).
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ], swiftSettings: strict),
    ]
)
