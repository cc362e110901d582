import Foundation

/// The dates a receipt, signed transaction or notification may claim before anything is done with them:
/// from 2008-01-01 (before the first in-app purchase) to one day past now.
///
/// A claimed date is read before the signature or chain is checked (the chain is validated *at* it), so
/// it is attacker-chosen: swift-certificates turns the validation time into an X.509 `GeneralizedTime`
/// with a `try!` that traps outside the years 0–9999 (a `signedDate` of 1e17 ms, a receipt created
/// `9999-12-31T23:59:59-23:59`). Nothing outside this window reaches it, or the ledger.
public struct SignedDateWindow: Sendable {
    /// 2008-01-01T00:00:00Z.
    public static let earliest = Date(timeIntervalSince1970: 1_199_145_600)
    /// How far past now a date may lie: clocks disagree, but not by days.
    public static let futureAllowance: TimeInterval = 24 * 3600

    public let earliest: Date
    public let latest: Date

    public init(now: Date) {
        self.earliest = Self.earliest
        self.latest = now.addingTimeInterval(Self.futureAllowance)
    }

    public func contains(_ date: Date) -> Bool { earliest <= date && date <= latest }

    /// The years swift-certificates can turn into an X.509 time without trapping (1–9999; NaN is not):
    /// the chain validators check it again themselves, whoever calls them.
    static func isRepresentableInX509(_ date: Date) -> Bool {
        (-62_135_596_800...253_402_300_799).contains(date.timeIntervalSince1970)
    }

    /// `date`, or a refusal with `reason` naming `what` when it lies outside the window.
    @discardableResult
    func check(_ date: Date, _ what: String, reason: ReceiptRefusal.Reason) throws(ReceiptRefusal) -> Date {
        guard contains(date) else {
            // Years 1–9999 print as dates; anything further as seconds, which always print.
            let seconds = date.timeIntervalSince1970
            let shown =
                (-62_135_596_800...253_402_300_799).contains(seconds) ? date.ISO8601Format() : "\(seconds) s since 1970"
            throw ReceiptRefusal(
                reason,
                "\(what) is \(shown), outside \(earliest.ISO8601Format()) … \(latest.ISO8601Format())")
        }
        return date
    }
}
