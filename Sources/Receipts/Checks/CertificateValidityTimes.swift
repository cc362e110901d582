import SwiftASN1
import X509

/// Checks on a parsed certificate's validity times that swift-certificates leaves to its callers.
///
/// swift-asn1 accepts the seconds 60 and 61 (leap seconds) in `UTCTime` and `GeneralizedTime`, and
/// swift-certificates then asserts seconds below 61 when it turns them into a `Date` (an assertion:
/// a trap in debug builds, which the tests and fuzzers run). A certificate we have not verified (a
/// forger's own leaf) must not reach `notValidBefore`/`notValidAfter` with one, so such certificates are
/// refused right after parsing.
enum CertificateValidityTimes {
    /// True when either validity time has seconds of 60 or more (or the validity cannot be read back).
    static func haveLeapSecond(_ certificate: Certificate) -> Bool {
        guard let tbs = try? DER.parse(certificate.tbsCertificateBytes), case .constructed(let fields) = tbs.content
        else { return true }
        var iterator = fields.makeIterator()
        // TBSCertificate: [0] version (optional), serialNumber, signature, issuer, validity, ...
        guard var node = iterator.next() else { return true }
        if node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            guard let serial = iterator.next() else { return true }
            node = serial
        }
        guard iterator.next() != nil, iterator.next() != nil, let validity = iterator.next(),
            case .constructed(let times) = validity.content
        else { return true }
        for time in times {
            guard case .primitive(let bytes) = time.content else { return true }
            // YYMMDDhhmmss (UTCTime) or YYYYMMDDhhmmss (GeneralizedTime): the digits are validated already.
            let seconds = bytes.startIndex + (time.identifier == .utcTime ? 10 : 12)
            guard bytes.endIndex >= seconds + 2 else { return true }
            if (Int(bytes[seconds]) - 0x30) * 10 + (Int(bytes[seconds + 1]) - 0x30) >= 60 { return true }
        }
        return false
    }
}
