import Foundation
import Testing

@testable import Webhooks

/// Webhook destinations (security issue 39, finding 6): only public unicast addresses, in every
/// spelling, at creation and on the addresses a host name resolves to; loopback only when opted in.
@Suite("Webhooks: destinations are public addresses, in every spelling")
struct WebhookDestinationTests {
    /// Hosts (as written in an `https://HOST/hooks` URL) in a range of IANA's special-purpose registries,
    /// or loopback, or otherwise no public unicast address; each must be refused with `destination_refused`.
    static let refusedHosts: [String] = [
        // IPv4, one or two per range.
        "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.254", "127.0.0.1",
        "127.255.255.254", "169.254.169.254", "169.254.0.1", "172.16.0.1", "172.31.255.255", "192.0.0.1",
        "192.0.0.170", "192.0.2.1", "192.88.99.1", "192.168.0.1", "192.168.255.255", "198.18.0.1",
        "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1",
        "255.255.255.254", "255.255.255.255",
        // IPv4 as inet_aton (and so getaddrinfo) reads it: decimal, hex, octal, short forms, a trailing dot.
        "2130706433", "0x7f000001", "0X7F000001", "017700000001", "0x7f.1", "0x7f.0.0.1", "0177.0.0.1",
        "0177.1", "127.1", "127.0.1", "127.0.0.1.", "0", "0x0", "2852039166", "0xa9.0xfe.0xa9.0xfe",
        "0251.0376.0251.0376", "169.254.43518", "012.0.0.1", "10.1", "167772161", "0300.0250.1.1", "3232235777",
        "192.168.257", "0xc0a80101", "0xac.16.0.1", "100.0x40.0.1",
        // IPv6 and its embedded IPv4 forms.
        "[::]", "[::1]", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::FFFF:10.0.0.1]",
        "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "[::ffff:0.0.0.0]", "[::ffff:192.168.1.1]",
        "[::127.0.0.1]", "[::8.8.8.8]", "[::10.0.0.1]", "[64:ff9b::10.0.0.1]", "[64:ff9b::a9fe:a9fe]",
        "[64:ff9b::127.0.0.1]", "[64:ff9b:1::1]", "[100::1]", "[2001::1]", "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
        "[2001:db8::1]", "[2001:db8:85a3::8a2e:370:7334]", "[2002:a00:1::1]", "[2002:c0a8:101::1]",
        "[2002:7f00:1::]", "[3fff::1]", "[5f00::1]", "[fc00::1]", "[fd00::1]", "[fd12:3456:789a::1]", "[fe80::1]",
        "[febf:ffff::1]", "[fec0::1]", "[ff02::1]", "[ff05::1:3]", "[::2]", "[4000::1]", "[::1.2.3.4]",
        // Names for this machine (RFC 6761).
        "localhost", "LOCALHOST", "localhost.", "api.localhost", "a.b.LocalHost",
    ]

    /// Public addresses and host names: accepted when an endpoint is added (host names are checked
    /// again, on what they resolve to, at each delivery).
    static let acceptedHosts: [String] = [
        "8.8.8.8", "1.1.1.1", "93.184.216.34", "11.0.0.1", "100.63.255.255", "100.128.0.1", "126.255.255.255",
        "128.0.0.1", "169.253.255.255", "169.255.0.1", "172.15.255.255", "172.32.0.1", "192.0.1.1", "192.88.98.1",
        "192.167.255.255", "192.169.0.1", "198.17.255.255", "198.20.0.1", "223.255.255.255",
        "[2606:4700::1111]", "[2001:4860:4860::8888]", "[2a00:1450:4001:82b::200e]", "[2620:fe::fe]",
        "[::ffff:8.8.8.8]", "[64:ff9b::808:808]", "[2002:808:808::1]", "[2400:cb00::1]",
        "hooks.example.com", "example.com", "a-b.example.co.kr", "xn--9n2bp8q.example", "localhost.example.com",
        "mylocalhost", "10.0.0.1.example.com",
    ]

    @Test("creation refuses every non-public address in every spelling, with destination_refused")
    func refusedAtCreation() {
        for host in Self.refusedHosts {
            for url in ["https://\(host)/hooks", "https://\(host):8443/hooks"] {
                do {
                    let accepted = try WebhookURL(url)
                    Issue.record("\(url) was accepted as \(accepted)")
                } catch {
                    #expect(error.code == .destinationRefused, "\(url): \(error.code) \(error.message)")
                }
            }
        }
    }

    @Test("public addresses and host names are accepted at creation")
    func acceptedAtCreation() {
        for host in Self.acceptedHosts {
            #expect(throws: Never.self, "https://\(host)/hooks") { try WebhookURL("https://\(host)/hooks") }
        }
    }

    @Test("a public address in an odd spelling is refused as invalid input, naming the address to write")
    func oddSpellingsOfPublicAddresses() {
        for (host, canonical) in [
            ("134744072", "8.8.8.8"), ("0x8.0x8.0x8.0x8", "8.8.8.8"), ("010.8.8.8", "8.8.8.8"), ("8.8.2056", "8.8.8.8"),
            ("8.8.8.8.", "8.8.8.8"), ("1.1", "1.0.0.1"),
        ] {
            do {
                let accepted = try WebhookURL("https://\(host)/hooks")
                Issue.record("\(host) was accepted as \(accepted)")
            } catch {
                #expect(error.code == .invalidInput && error.message.contains(canonical), "\(host): \(error.message)")
            }
        }
        // Numbers that are no address at all (getaddrinfo would ask DNS for them).
        for host in ["256.1.1.1", "1.2.3.4.5", "0x100000000", "08.1.1.1", "4294967296", "1..2.3"] {
            #expect(throws: WebhookError.self, "\(host)") { try WebhookURL("https://\(host)/hooks") }
        }
    }

    @Test("zone ids, percent-encoded and otherwise odd hosts are refused")
    func oddHosts() {
        for url in [
            "https://[fe80::1%25eth0]/hooks", "https://[fe80::1%eth0]/hooks", "https://[2606:4700::1111%251]/hooks",
            "https://%31%32%37.0.0.1/hooks", "https://loc%61lhost/hooks", "https://exa_mple.com/hooks",
            "https://[::1/hooks", "https://-bad.example.com/hooks",
            "https://" + String(repeating: "a", count: 64) + ".com/x",
        ] {
            #expect(throws: WebhookError.self, "\(url)") { try WebhookURL(url) }
        }
    }

    @Test("without the opt-in, loopback is refused over http and https; with it, only loopback is added")
    func loopbackOptIn() throws {
        let loopback = [
            "http://127.0.0.1:9000/x", "https://127.0.0.1/x", "http://127.0.0.2/x", "http://localhost/x",
            "http://localhost:8080/x", "https://localhost/x", "http://[::1]:8080/x", "https://[::1]/x",
            "http://[::ffff:127.0.0.1]:8080/x", "http://LocalHost/x",
        ]
        for url in loopback {
            do {
                _ = try WebhookURL(url)
                Issue.record("\(url) was accepted without the opt-in")
            } catch {
                #expect(error.code == .destinationRefused, "\(url): \(error.message)")
                #expect(
                    error.message.contains("--webhook-allow-loopback"), "the message names the opt-in: \(error.message)"
                )
            }
            #expect(throws: Never.self, "\(url) with the opt-in") {
                try WebhookURL(url, destinations: .publicAndLoopback)
            }
        }
        // The opt-in is for loopback only: every other non-public address stays refused, and plain http
        // goes nowhere else.
        for host in Self.refusedHosts {
            let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            if let address = WebhookIPAddress(bare) ?? WebhookIPAddress.inetAton(bare),
                Self.isLoopback(address)
            {
                continue
            }
            if host.lowercased().hasSuffix("localhost") || host.lowercased().hasSuffix("localhost.") { continue }
            #expect(throws: WebhookError.self, "\(host) with the opt-in") {
                try WebhookURL("https://\(host)/x", destinations: .publicAndLoopback)
            }
        }
        for url in ["http://hooks.example.com/x", "http://8.8.8.8/x", "http://[2606:4700::1111]/x"] {
            for destinations in [WebhookDestinations.publicOnly, .publicAndLoopback] {
                do {
                    _ = try WebhookURL(url, destinations: destinations)
                    Issue.record("\(url) was accepted")
                } catch {
                    #expect(error.message.contains("must be https"), "\(url): \(error.message)")
                }
            }
        }
    }

    static func isLoopback(_ address: WebhookIPAddress) -> Bool {
        switch address {
        case .v4(let value): value >> 24 == 127
        case .v6(let high, let low): high == 0 && (low == 1 || low >> 32 == 0xFFFF && low >> 24 & 0xFF == 127)
        }
    }

    @Test("resolved addresses: the same ranges, public ones pass, loopback only with the opt-in")
    func resolvedAddresses() throws {
        let refused = [
            "0.0.0.0", "10.1.2.3", "100.64.0.1", "127.0.0.1", "127.8.9.10", "169.254.169.254", "172.16.5.4",
            "192.0.0.8", "192.0.2.1", "192.168.1.1", "198.18.0.1", "198.51.100.1", "203.0.113.1", "224.0.0.251",
            "240.0.0.1", "255.255.255.255", "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1",
            "2001:db8::1", "fc00::1", "fd00::1", "fe80::1", "ff02::1", "2002:a9fe:a9fe::1", "64:ff9b:1::1",
        ]
        for text in refused {
            let address = try #require(WebhookIPAddress(text), "\(text)")
            #expect(WebhookDestinations.publicOnly.refusal(of: address) != nil, "\(text) is refused")
        }
        for text in ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8"] {
            let address = try #require(WebhookIPAddress(text), "\(text)")
            #expect(WebhookDestinations.publicOnly.refusal(of: address) == nil, "\(text) passes")
            #expect(WebhookDestinations.publicAndLoopback.refusal(of: address) == nil, "\(text) passes")
        }
        for text in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            let address = try #require(WebhookIPAddress(text), "\(text)")
            #expect(WebhookDestinations.publicAndLoopback.refusal(of: address) == nil, "\(text) with the opt-in")
        }
        for text in ["10.0.0.1", "169.254.169.254", "fd00::1", "fe80::1", "0.0.0.0", "::", "64:ff9b::7f00:1"] {
            let address = try #require(WebhookIPAddress(text), "\(text)")
            #expect(WebhookDestinations.publicAndLoopback.refusal(of: address) != nil, "\(text) even with the opt-in")
        }
    }

    @Test("pinned clients: kept while the answers include the address, replaced when not, at most 64 idle hosts")
    func pinnedClients() async throws {
        // Clients are made and shut down, never used: no connection is opened.
        let clients = WebhookClients()
        let one = try #require(WebhookIPAddress("127.0.0.1"))
        let two = try #require(WebhookIPAddress("127.0.0.2"))
        let first = try await clients.lease(host: "one.shopledger.test", addresses: [one])
        let again = try await clients.lease(host: "one.shopledger.test", addresses: [two, one])
        #expect(again.client === first.client && again.address == one, "the pinned address is still an answer")
        let moved = try await clients.lease(host: "one.shopledger.test", addresses: [two])
        #expect(moved.client !== first.client && moved.address == two, "a new answer: a new client")
        let direct = try await clients.leaseDirect()
        #expect(direct.address == nil && direct.client !== moved.client)
        for lease in [first, again, moved, direct] { await clients.release(lease) }
        for index in 0..<(WebhookClients.maximumHosts + 6) {
            let lease = try await clients.lease(host: "h\(index).shopledger.test", addresses: [one])
            await clients.release(lease)
        }
        #expect(await clients.pinnedHosts == WebhookClients.maximumHosts, "the least recently used idle ones went")
        await clients.shutdown()
        await #expect(throws: (any Error).self) { try await clients.leaseDirect() }
    }

    @Test("inet_aton's readings of IPv4, and the standard forms the HTTP client connects to without resolving")
    func parsing() {
        #expect(WebhookIPAddress.inetAton("127.1") == .v4(0x7F00_0001))
        #expect(WebhookIPAddress.inetAton("0x7f.1") == .v4(0x7F00_0001))
        #expect(WebhookIPAddress.inetAton("017700000001") == .v4(0x7F00_0001))
        #expect(WebhookIPAddress.inetAton("2130706433") == .v4(0x7F00_0001))
        #expect(WebhookIPAddress.inetAton("1.2.3") == .v4(0x0102_0003))
        #expect(WebhookIPAddress.inetAton("256.0.0.1") == nil)
        #expect(WebhookIPAddress.inetAton("1.2.65536") == nil)
        #expect(WebhookIPAddress.inetAton("09") == nil)
        #expect(WebhookIPAddress.inetAton("a.b.c.d") == nil)
        #expect(WebhookIPAddress("127.1") == nil, "not a standard form: the HTTP client would resolve it")
        #expect(WebhookIPAddress("::ffff:127.0.0.1")?.description == "::ffff:127.0.0.1")
        #expect(WebhookIPAddress("2606:4700:0::1111")?.description == "2606:4700::1111")
        #expect(WebhookIPAddress("fe80::1%eth0") == nil)
    }
}
