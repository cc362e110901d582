import SwiftASN1
import X509

/// Apple's chain requirements on top of RFC 5280, as in Apple's App Store Server Library: exactly
/// leaf → intermediate → root, the intermediate marked as Apple's WWDR intermediate and the leaf as an
/// App Store receipt-signing certificate.
struct AppStoreOIDPolicy: VerifierPolicy, Sendable {
    static let wwdrIntermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    static let receiptSigningLeafOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    // The OIDs are checked for presence only; they are not claimed as understood critical extensions.
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "AppStoreOIDPolicy: chain has \(chain.count) certificates, not 3")
        }
        guard chain[1].extensions.contains(where: { $0.oid == Self.wwdrIntermediateOID }) else {
            return .failsToMeetPolicy(reason: "AppStoreOIDPolicy: intermediate lacks OID 1.2.840.113635.100.6.2.1")
        }
        guard chain[0].extensions.contains(where: { $0.oid == Self.receiptSigningLeafOID }) else {
            return .failsToMeetPolicy(reason: "AppStoreOIDPolicy: leaf lacks OID 1.2.840.113635.100.6.11.1")
        }
        return .meetsPolicy
    }
}
