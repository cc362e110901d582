import Foundation
import FuzzTargets

/// The fixed dates of the fuzz PKI and its seeds: every certificate is valid from 2020-01-01 to 2045-01-01;
/// the seeds are signed on 2030-06-06 and Firebase tokens issued at the harness's pinned clock.
enum SeedDates {
    static let pkiStart = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01T00:00:00Z
    static let pkiEnd = Date(timeIntervalSince1970: 2_366_841_600)  // 2045-01-01T00:00:00Z
    static let signed = Date(timeIntervalSince1970: 1_906_977_600)  // 2030-06-06T12:00:00Z
    static let signedMs: Int64 = 1_906_977_600_000
    static let purchaseMs: Int64 = 1_906_891_200_000  // a day before
    static let originalPurchaseMs: Int64 = 1_893_456_000_000  // 2030-01-01
    static let firebaseNow = FuzzPKI.firebaseNow

    static let bundleId = FuzzPKI.bundleId
    static let face = "com.memolease.sesac1.sprout3"
    static let background = "com.memolease.sesac1.background2"
}
