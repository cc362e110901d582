import SwiftASN1
import X509

/// The PKCS#7 / CMS `SignedData` container of a classic receipt (RFC 5652), read with swift-asn1's BER
/// parser: Apple writes the outer structure with indefinite lengths, which strict DER refuses. Holds what
/// verification needs and nothing is checked here beyond the shape: one signer, content type `data`,
/// content embedded.
///
/// swift-certificates' CMS types are internal to X509, and its `CMS.isValidAttachedSignature` neither
/// hands back the content (needed first, for the creation date the chain is validated at) nor tells a
/// bad signature from a bad chain, nor accepts the bare `rsaEncryption` signature algorithm identifier
/// Apple's receipts carry; hence this reader.
struct SignedReceipt: Sendable {
    /// How the signer is named in its `SignerInfo`.
    enum SignerIdentifier: Sendable {
        case issuerAndSerialNumber(DistinguishedName, Certificate.SerialNumber)
        case subjectKeyIdentifier(ArraySlice<UInt8>)
    }

    /// The embedded content: the DER receipt attributes.
    var content: [UInt8]
    /// Every certificate the container carries (leaf, intermediate, sometimes the root), in order.
    var certificates: [Certificate]
    var signer: SignerIdentifier
    /// The signer's `digestAlgorithm`.
    var digestAlgorithm: ASN1ObjectIdentifier
    /// The signer's `signatureAlgorithm` (Apple writes `rsaEncryption`, leaving the hash to `digestAlgorithm`).
    var signatureAlgorithm: ASN1ObjectIdentifier
    var signature: [UInt8]
    /// The DER `SET OF Attribute` the signature covers when signed attributes are present, re-tagged from
    /// `[0] IMPLICIT` to `SET` as RFC 5652 §5.4 says; nil when the signature is over the content itself.
    var signedAttributes: [UInt8]?
    /// The `message-digest` signed attribute, when signed attributes are present.
    var messageDigest: [UInt8]?
    /// The `content-type` signed attribute, when signed attributes are present.
    var signedContentType: ASN1ObjectIdentifier?

    /// The most certificates a receipt may carry: Apple's carry the signer, the WWDR intermediate and the
    /// root; one more is allowed for an intermediate Apple might add.
    static let maximumCertificates = 4
    /// The largest certificate read: Apple's receipt certificates are 1–1.5 KiB.
    static let maximumCertificateBytes = 8 * 1024

    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
    static let dataOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
    static let contentTypeOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 3]
    static let messageDigestOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 4]
}

extension SignedReceipt {
    /// Reads a BER `ContentInfo` holding `SignedData`. Bounded by swift-asn1: at most 50 levels of nesting,
    /// every length checked against the bytes present, no trailing bytes.
    init(berEncoded bytes: [UInt8]) throws(ReceiptRefusal) {
        do {
            self = try Self.read(try BER.parse(bytes))
        } catch let refusal as ReceiptRefusal {
            throw refusal
        } catch {
            throw ReceiptRefusal(.malformedReceipt, "the receipt is not a BER PKCS#7 SignedData: \(error)")
        }
    }

    private static func read(_ root: ASN1Node) throws -> SignedReceipt {
        try BER.sequence(root, identifier: .sequence) { nodes in
            let contentType = try ASN1ObjectIdentifier(berEncoded: &nodes)
            guard contentType == signedDataOID else { throw shape("content type \(contentType) is not signedData") }
            let signedData = try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { $0 }
            return try readSignedData(signedData)
        }
    }

    private static func readSignedData(_ node: ASN1Node) throws -> SignedReceipt {
        try BER.sequence(node, identifier: .sequence) { nodes in
            _ = try Int(berEncoded: &nodes)
            guard let digestAlgorithms = nodes.next(), digestAlgorithms.identifier == .set else {
                throw shape("SignedData has no digestAlgorithms SET")
            }
            let content = try BER.sequence(try next(&nodes, "encapContentInfo"), identifier: .sequence) { inner in
                let type = try ASN1ObjectIdentifier(berEncoded: &inner)
                guard type == dataOID else { throw shape("the signed content type \(type) is not data") }
                guard
                    let octets = try BER.optionalExplicitlyTagged(
                        &inner, tagNumber: 0, tagClass: .contextSpecific, { try ASN1OctetString(berEncoded: $0) })
                else { throw shape("the content is detached; a receipt embeds it") }
                return Array(octets.bytes)
            }
            var node = try next(&nodes, "signerInfos")
            var certificates: [Certificate] = []
            if node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                guard case .constructed(let children) = node.content else { throw shape("certificates is not a SET") }
                // Counted before any is parsed: each certificate is a candidate for the chain, and look-alikes
                // multiply the paths a chain builder tries.
                let count = children.reduce(0) { count, _ in count + 1 }
                guard count <= maximumCertificates else {
                    throw shape(
                        "the receipt carries \(count) certificates; at most \(maximumCertificates) are accepted "
                            + "(Apple's receipts carry 3)")
                }
                for child in children {
                    guard child.encodedBytes.count <= maximumCertificateBytes else {
                        throw shape(
                            "a certificate is over \(maximumCertificateBytes) bytes (Apple's are about 1.5 KiB)")
                    }
                    let certificate = try Certificate(derEncoded: Array(child.encodedBytes))
                    guard !CertificateValidityTimes.haveLeapSecond(certificate) else {
                        throw shape("a certificate has a validity time with 60 or more seconds")
                    }
                    certificates.append(certificate)
                }
                node = try next(&nodes, "signerInfos")
            }
            if node.identifier == ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific) {
                node = try next(&nodes, "signerInfos")  // CRLs: not used.
            }
            guard node.identifier == .set, case .constructed(let signerInfos) = node.content else {
                throw shape("SignedData has no signerInfos SET")
            }
            var signers = signerInfos.makeIterator()
            guard let signerNode = signers.next(), signers.next() == nil else {
                throw shape("a receipt has exactly one signer")
            }
            guard nodes.next() == nil else { throw shape("SignedData has trailing fields") }
            var receipt = try readSignerInfo(signerNode)
            receipt.content = content
            receipt.certificates = certificates
            return receipt
        }
    }

    private static func readSignerInfo(_ node: ASN1Node) throws -> SignedReceipt {
        try BER.sequence(node, identifier: .sequence) { nodes in
            _ = try Int(berEncoded: &nodes)
            let sidNode = try next(&nodes, "sid")
            let signer: SignerIdentifier
            if sidNode.identifier == .sequence {
                signer = try BER.sequence(sidNode, identifier: .sequence) { sid in
                    let issuer = try DistinguishedName(derEncoded: try next(&sid, "issuer"))
                    let serialNode = try next(&sid, "serialNumber")
                    guard serialNode.identifier == .integer, case .primitive(let serial) = serialNode.content else {
                        throw shape("the signer's serial number is not an INTEGER")
                    }
                    return .issuerAndSerialNumber(issuer, Certificate.SerialNumber(bytes: serial))
                }
            } else if sidNode.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific),
                case .primitive(let keyIdentifier) = sidNode.content
            {
                signer = .subjectKeyIdentifier(keyIdentifier)
            } else {
                throw shape("the signer identifier is neither issuerAndSerialNumber nor subjectKeyIdentifier")
            }
            let digestAlgorithm = try algorithm(try next(&nodes, "digestAlgorithm"))
            var node = try next(&nodes, "signatureAlgorithm")
            var signedAttributes: [UInt8]?
            var messageDigest: [UInt8]?
            var signedContentType: ASN1ObjectIdentifier?
            if node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                guard case .constructed(let attributes) = node.content else { throw shape("signedAttrs is not a SET") }
                var encoded = Array(node.encodedBytes)
                encoded[0] = 0x31
                signedAttributes = encoded
                for attribute in attributes {
                    try BER.sequence(attribute, identifier: .sequence) { parts in
                        let type = try ASN1ObjectIdentifier(berEncoded: &parts)
                        let values = try next(&parts, "attribute values")
                        guard case .constructed(let valueNodes) = values.content else {
                            throw shape("signed attribute \(type) has no value")
                        }
                        var valueIterator = valueNodes.makeIterator()
                        guard let first = valueIterator.next() else {
                            throw shape("signed attribute \(type) has no value")
                        }
                        if type == messageDigestOID {
                            messageDigest = Array(try ASN1OctetString(berEncoded: first).bytes)
                        } else if type == contentTypeOID {
                            signedContentType = try ASN1ObjectIdentifier(berEncoded: first)
                        }
                    }
                }
                node = try next(&nodes, "signatureAlgorithm")
            }
            let signatureAlgorithm = try algorithm(node)
            let signature = Array(try ASN1OctetString(berEncoded: &nodes).bytes)
            return SignedReceipt(
                content: [], certificates: [], signer: signer, digestAlgorithm: digestAlgorithm,
                signatureAlgorithm: signatureAlgorithm, signature: signature, signedAttributes: signedAttributes,
                messageDigest: messageDigest, signedContentType: signedContentType)
        }
    }

    /// The OID of an `AlgorithmIdentifier ::= SEQUENCE { algorithm OID, parameters ANY OPTIONAL }`.
    private static func algorithm(_ node: ASN1Node) throws -> ASN1ObjectIdentifier {
        try BER.sequence(node, identifier: .sequence) { parts in
            let oid = try ASN1ObjectIdentifier(berEncoded: &parts)
            _ = parts.next()
            return oid
        }
    }

    private static func next(_ nodes: inout ASN1NodeCollection.Iterator, _ name: String) throws -> ASN1Node {
        guard let node = nodes.next() else { throw shape("SignedData ends before its \(name)") }
        return node
    }

    private static func shape(_ message: String) -> ReceiptRefusal { ReceiptRefusal(.malformedReceipt, message) }

    /// The certificate that signed, among those the container carries.
    var signerCertificate: Certificate? {
        certificates.first { certificate in
            switch signer {
            case .issuerAndSerialNumber(let issuer, let serial):
                certificate.issuer == issuer && certificate.serialNumber == serial
            case .subjectKeyIdentifier(let keyIdentifier):
                (try? certificate.extensions.subjectKeyIdentifier)?.keyIdentifier == keyIdentifier
            }
        }
    }
}
