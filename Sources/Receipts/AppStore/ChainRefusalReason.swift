import Foundation
import X509

/// Why swift-certificates' `Verifier` refused a chain, in words for a refusal message. The reason is the
/// failing policy's own (RFC 5280's validity, basic and name constraints, ``AppStoreOIDPolicy``), not
/// re-derived here; only the certificates it names are shortened, from a dump of kilobytes (key,
/// signature, every extension) to their place in the chain and their validity.
enum ChainRefusalReason {
    /// Refusal messages go back to the client; a policy that quotes names from the certificates is cut.
    static let maxLength = 400

    /// The first policy failure's reason, or nil when the `Verifier` reported none: it found no chain
    /// from the leaf to a configured root (no issuer, or none whose signature verifies), so no policy ran.
    /// - Parameter leafName: what the chain's first certificate is called ("leaf", "signing").
    static func describe(_ failures: [CertificateValidationResult.PolicyFailure], leafName: String) -> String? {
        guard let failure = failures.first else { return nil }
        var text = failure.policyFailureReason.description
        let chain = Array(failure.chain)
        for (index, certificate) in chain.enumerated() {
            let name = index == 0 ? leafName : index == chain.count - 1 ? "root" : "intermediate"
            text = text.replacingOccurrences(
                of: String(describing: certificate),
                with: "\(name) (valid \(certificate.notValidBefore.ISO8601Format()) "
                    + "to \(certificate.notValidAfter.ISO8601Format()))")
        }
        return String(text.prefix(maxLength))
    }
}
