import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Google's certificate document as one fetch found it, and how long its headers say it stays fresh.
public struct FetchedGoogleCertificates: Sendable {
    public let certificates: GoogleCertificates
    /// `Cache-Control: max-age` less `Age` (or `Expires` less `Date`); `nil` when the answer said nothing.
    public let freshFor: Duration?
}

/// Fetches Google's securetoken certificates over HTTP(S): the JSON document ``GoogleCertificates``
/// parses, as Google serves it at ``googleURL`` with `Cache-Control: public, max-age=…` (a few hours).
///
/// One GET with a timeout; the answer must be 200 and at most ``GoogleCertificates/maxFileBytes``; a
/// body that is not a usable key set is refused whole, as a file would be.
public struct GoogleCertificateFetcher: Sendable {
    /// Where Google publishes the keys Firebase Authentication signs ID tokens with.
    public static let googleURL =
        "https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"

    public let url: String
    let timeout: Duration
    let httpClient: HTTPClient

    public init(url: String, timeout: Duration = .seconds(10), httpClient: HTTPClient = .shared) {
        self.url = url
        self.timeout = timeout
        self.httpClient = httpClient
    }

    /// `https://…`, or `http://` to a loopback address (a fake in tests); anything else cannot be trusted
    /// to carry the keys every sign-in is checked with.
    public static func validate(url text: String) throws(AuthConfigurationError) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty
        else {
            throw AuthConfigurationError("the Google certificate URL \(text.prefix(100).debugDescription) is not a URL")
        }
        let loopback = ServerConfiguration.isLoopback(host)
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw AuthConfigurationError(
                "the Google certificate URL must be https (http only to a loopback address), got \(scheme)://\(host)")
        }
    }

    /// One fetch. Throws with the status, the transport error or what is wrong with the document.
    public func fetch() async throws(AuthConfigurationError) -> FetchedGoogleCertificates {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let status: UInt
        let headers: (cacheControl: String?, age: String?, expires: String?, date: String?)
        let body: ByteBuffer
        do {
            let response = try await httpClient.execute(
                request, timeout: .milliseconds(Int64(timeout / .milliseconds(1))), logger: nil)
            status = response.status.code
            headers = (
                response.headers.first(name: "Cache-Control"), response.headers.first(name: "Age"),
                response.headers.first(name: "Expires"), response.headers.first(name: "Date")
            )
            body = try await response.body.collect(upTo: GoogleCertificates.maxFileBytes)
        } catch let error as NIOTooManyBytesError {
            throw AuthConfigurationError(
                "\(url): the answer is over \(GoogleCertificates.maxFileBytes) bytes (\(error))")
        } catch {
            throw AuthConfigurationError("\(url): \(String(describing: error).prefix(200))")
        }
        guard status == 200 else {
            throw AuthConfigurationError("\(url) answered HTTP \(status)")
        }
        let certificates: GoogleCertificates
        do {
            certificates = try GoogleCertificates(parsingJSON: Data(body.readableBytesView))
        } catch {
            throw AuthConfigurationError("\(url): \(error.description)")
        }
        let lifetime = HTTPFreshness.lifetime(
            cacheControl: headers.cacheControl, age: headers.age, expires: headers.expires, date: headers.date)
        return FetchedGoogleCertificates(
            certificates: certificates, freshFor: lifetime.map { .milliseconds(Int64(($0 * 1000).rounded())) })
    }

    /// The fetch `serve` makes before it starts: tried again (after 0.25 s, 0.5 s, 1 s, … ) until
    /// `deadline` has passed, so that a brief failure does not stop the start and a wrong URL does.
    public func fetchAtStart(
        within deadline: Duration = .seconds(10), logger: Logger
    ) async throws(AuthConfigurationError) -> FetchedGoogleCertificates {
        let clock = ContinuousClock()
        let end = clock.now + deadline
        var pause = Duration.milliseconds(250)
        while true {
            do {
                let fetched = try await fetch()
                logger.notice(
                    "fetched Google's certificates",
                    metadata: [
                        "url": "\(url)", "keys": "\(fetched.certificates.keyIDs.joined(separator: ","))",
                        "fresh_for": "\(fetched.freshFor.map { "\($0)" } ?? "unknown")",
                    ])
                return fetched
            } catch {
                guard clock.now + pause < end else {
                    throw AuthConfigurationError("cannot fetch Google's certificates: \(error.description)")
                }
                logger.warning(
                    "cannot fetch Google's certificates yet; trying again",
                    metadata: ["error": "\(error.description)", "in": "\(pause)"])
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(2))
            }
        }
    }
}
