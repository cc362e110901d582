import Foundation
import Testing

@testable import Postgres

@Suite("Timestamp text forms")
struct TimestampTests {
    @Test("format and parse agree over a wide range, including BC and leap days")
    func roundTrip() throws {
        let samples: [Double] = [
            0, -1, 951_782_400.5, 1_709_164_800.000_001, -62_135_596_800, -62_198_755_200, 4_102_444_800.5,
        ]
        for seconds in samples {
            let date = Date(timeIntervalSince1970: seconds)
            let text = PostgresTimestamp.format(date)
            let parsed = try #require(PostgresTimestamp.parse(Array(text.utf8)), "\(text)")
            #expect(abs(parsed.timeIntervalSince1970 - seconds) < 0.000_002, "\(text)")
        }
    }

    @Test("server forms with offsets and dates parse; garbage does not")
    func serverForms() {
        #expect(PostgresTimestamp.parse(Array("2024-01-02 03:04:05+00".utf8))?.timeIntervalSince1970 == 1_704_164_645)
        #expect(PostgresTimestamp.parse(Array("2024-01-02 12:04:05+09".utf8))?.timeIntervalSince1970 == 1_704_164_645)
        #expect(
            PostgresTimestamp.parse(Array("2024-01-01 22:34:05-04:30".utf8))?.timeIntervalSince1970 == 1_704_164_645)
        #expect(PostgresTimestamp.parse(Array("2024-01-02".utf8))?.timeIntervalSince1970 == 1_704_153_600)
        for garbage in ["", "2024-13-01", "2024-01-02 25", "infinity", "2024-01-02 03:04:05.+00", "2024-01-02x"] {
            #expect(PostgresTimestamp.parse(Array(garbage.utf8)) == nil, "\(garbage)")
        }
    }
}
