import HTTPTypes
import Hummingbird
import HummingbirdTesting
import TestSupport
import Testing

@testable import ShopServer

@Suite("Trusted proxies: X-Forwarded-For names the client only when a trusted proxy sends it")
struct TrustedProxyTests {
    static func proxies(_ items: String...) throws(TrustedProxyError) -> TrustedProxies {
        try TrustedProxies(parsing: items)
    }

    static func address(_ text: String) throws -> IPAddress {
        try #require(IPAddress(text))
    }

    @Test("addresses and CIDR blocks parse; anything else is refused with the item named")
    func parsing() throws {
        let parsed = try Self.proxies("127.0.0.1, 10.0.0.0/8", "fd00::/8,::1")
        #expect(parsed.description == "127.0.0.1,10.0.0.0/8,fd00::/8,::1")
        #expect(try Self.proxies("::ffff:192.0.2.1").description == "192.0.2.1", "an IPv4-mapped address is IPv4")
        for bad in [
            "", "nginx", "10.0.0.1:80", "10.0.0.0/33", "::1/129", "10.0.0.0/", "10.0.0.0/8/8", "10.0.0.0/-1",
            "1.2.3", "[::1]", "fe80::1%eth0", "10.0.0.1,",
        ] {
            #expect(throws: TrustedProxyError.self, "\(bad.debugDescription) refused") { try Self.proxies(bad) }
        }
        do {
            _ = try Self.proxies("10.0.0.1, proxy.internal")
            Issue.record("a host name was accepted")
        } catch {
            #expect(error.value == "proxy.internal")
            #expect(error.description.contains("not an IP address or CIDR block"))
        }
    }

    @Test("CIDR membership, IPv4 and IPv6, host bits ignored, families apart")
    func membership() throws {
        let ranges = try Self.proxies("10.1.2.3/8", "192.168.1.0/23", "fd00::/8", "0.0.0.0/0")
        #expect(ranges.ranges[0].contains(try Self.address("10.200.0.1")))
        #expect(!ranges.ranges[0].contains(try Self.address("11.0.0.1")))
        #expect(ranges.ranges[1].contains(try Self.address("192.168.0.255")))
        #expect(!ranges.ranges[1].contains(try Self.address("192.168.2.0")))
        #expect(ranges.ranges[2].contains(try Self.address("fdab::1")))
        #expect(!ranges.ranges[2].contains(try Self.address("fe00::1")))
        #expect(ranges.ranges[3].contains(try Self.address("203.0.113.1")))
        #expect(!ranges.ranges[3].contains(try Self.address("::1")), "an IPv4 block never holds an IPv6 address")
        #expect(ranges.ranges[0].contains(try Self.address("::ffff:10.0.0.9")), "mapped addresses match IPv4 blocks")
    }

    @Test("the client: the right-most address that is not a trusted proxy, from a trusted peer only")
    func clientAddress() throws {
        let trusted = try Self.proxies("127.0.0.1", "10.0.0.0/8")
        let proxy = try Self.address("127.0.0.1")
        let stranger = try Self.address("198.51.100.7")
        func client(_ peer: IPAddress, _ fields: [String]) -> String? {
            trusted.client(peer: peer, forwardedFor: fields)?.description
        }
        // An untrusted peer is the client, whatever it claims.
        #expect(client(stranger, ["203.0.113.9"]) == "198.51.100.7")
        #expect(client(stranger, ["127.0.0.1"]) == "198.51.100.7")
        // From the trusted proxy the header is read.
        #expect(client(proxy, ["203.0.113.9"]) == "203.0.113.9")
        #expect(client(proxy, [" 203.0.113.9 "]) == "203.0.113.9")
        #expect(client(proxy, ["2001:db8::1"]) == "2001:db8::1")
        #expect(client(proxy, ["2001:DB8:0::1"]) == "2001:db8::1", "written in the canonical form")
        // What the client itself wrote stands left of what the proxy appended: the right-most wins.
        #expect(client(proxy, ["1.1.1.1, 203.0.113.9"]) == "203.0.113.9")
        #expect(client(proxy, ["1.1.1.1", "203.0.113.9"]) == "203.0.113.9", "several fields are one list")
        // Trusted proxies in the chain are skipped from the right.
        #expect(client(proxy, ["1.1.1.1, 203.0.113.9, 10.0.0.5"]) == "203.0.113.9")
        #expect(client(proxy, ["10.0.0.6, 10.0.0.5"]) == "10.0.0.6", "all trusted: the left-most")
        // Absent or malformed: the peer.
        #expect(client(proxy, []) == "127.0.0.1")
        for malformed in ["", "unknown", "203.0.113.9:4711", "[2001:db8::1]", "203.0.113.9,", "203.0.113.9, x", ",,"] {
            #expect(client(proxy, [malformed]) == "127.0.0.1", "\(malformed.debugDescription) falls back to the peer")
        }
        #expect(TrustedProxies.none.client(peer: proxy, forwardedFor: ["203.0.113.9"]) == proxy)
        #expect(trusted.client(peer: nil, forwardedFor: ["203.0.113.9"]) == nil, "no peer (a Unix socket): none")
    }

    @Test("development switches behind a trusted proxy need --allow-development-on-public-address")
    func developmentSwitchesBehindProxy() throws {
        var configuration = ServerTest.configuration()
        configuration.trustedProxies = try Self.proxies("127.0.0.1")
        #expect(configuration.host == "127.0.0.1")
        let error = #expect(throws: ConfigurationError.self) { try configuration.validate() }
        #expect(error?.description.contains("--trusted-proxy") == true, "\(String(describing: error))")
        #expect(error?.description.contains("--allow-development-on-public-address") == true)
        configuration.allowsDevelopmentOnPublicAddress = true
        try configuration.validate()
    }

    /// One request over TCP with `X-Forwarded-For`, against a server trusting `proxies`; the client
    /// address its request log line names.
    static func loggedClient(trusting proxies: TrustedProxies, forwardedFor: String) async throws -> String? {
        try await withTestDatabase { db in
            let logs = LogRecorder()
            var configuration = ServerTest.configuration()
            configuration.trustedProxies = proxies
            // The test signs in with development tokens, which a trusted proxy otherwise rules out.
            configuration.allowsDevelopmentOnPublicAddress = true
            let app = try buildApplication(configuration: configuration, client: db.client, logger: logs.logger)
            try await app.test(.live) { client in
                let answer = try await client.send(
                    .get, "/api/v1/catalog", headers: [HTTPField.Name("x-forwarded-for")!: forwardedFor])
                #expect(answer.status == .ok)
            }
            let line = logs.messages.last { $0.hasPrefix("request ") && $0.contains("path=/api/v1/catalog") }
            return line?.split(separator: " ").first { $0.hasPrefix("client=") }.map { String($0.dropFirst(7)) }
        }
    }

    @Test("X-Forwarded-For from an untrusted peer is ignored: the request log names the peer")
    func untrustedPeerIgnored() async throws {
        // The test client connects from 127.0.0.1, which is not the trusted proxy here.
        let client = try await Self.loggedClient(trusting: Self.proxies("192.0.2.10"), forwardedFor: "203.0.113.9")
        #expect(client == "127.0.0.1")
        let untrusting = try await Self.loggedClient(trusting: .none, forwardedFor: "203.0.113.9")
        #expect(untrusting == "127.0.0.1", "no --trusted-proxy: the header is never read")
    }

    @Test("X-Forwarded-For from the trusted proxy names the client in the request log")
    func trustedPeerUsed() async throws {
        let client = try await Self.loggedClient(
            trusting: Self.proxies("127.0.0.0/8"), forwardedFor: "198.51.100.1, 203.0.113.9")
        #expect(client == "203.0.113.9")
        let malformed = try await Self.loggedClient(trusting: Self.proxies("127.0.0.1"), forwardedFor: "nonsense")
        #expect(malformed == "127.0.0.1", "a malformed header falls back to the peer")
    }
}
