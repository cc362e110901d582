import Foundation
import Testing

@testable import Receipts

@Suite("Receipt dates")
struct ReceiptDateTests {
    @Test(
        "RFC 3339 as receipts write it",
        arguments: [
            ("2013-08-01T07:00:00Z", 1_375_340_400.0),
            ("2013-08-01T07:00:00.5Z", 1_375_340_400.5),
            ("2013-08-01T16:00:00+09:00", 1_375_340_400.0),
            ("2013-08-01T08:00:00+0100", 1_375_340_400.0),
            ("2013-08-01T02:00:00-05:00", 1_375_340_400.0),
            ("2024-02-29T00:00:00Z", 1_709_164_800.0),
            ("4001-01-01T00:00:00+0000", 64_092_211_200.0),
        ])
    func valid(text: String, seconds: Double) {
        #expect(ReceiptDate.parse(Array(text.utf8)) == Date(timeIntervalSince1970: seconds))
    }

    @Test(
        "anything else is not a date",
        arguments: [
            "", "2013-08-01", "2013-08-01T07:00:00", "2013-13-01T07:00:00Z", "2023-02-29T00:00:00Z",
            "2013-08-01T24:00:00Z", "2013-08-01T07:00:00.Z", "2013-08-01T07:00:00Zjunk", "20130801T070000Z",
            "2013-08-01T07:00:00+9", "٢٠١٣-08-01T07:00:00Z", String(repeating: "9", count: 100),
        ])
    func invalid(text: String) {
        #expect(ReceiptDate.parse(Array(text.utf8)) == nil)
    }
}
