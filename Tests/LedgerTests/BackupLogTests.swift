import Foundation
import Postgres
import TestSupport
import Testing

@testable import Ledger

/// `pgbackrest info --output=json` as ShopLedger reads it, and the `backups` table it records into
/// (migration 0019). FaultTests.BackupRestoreTests records real pgBackRest backups the same way.
@Suite("Backups recorded from pgBackRest's info")
struct BackupLogTests {
    /// What pgBackRest 2.45 (Debian bookworm) printed for a stanza `s` with a full and a diff backup:
    /// `pgbackrest --stanza=s info --output=json`, unedited. The system-id is above 2^53: a decoder that
    /// goes through Double would round it (jq prints 7713593072717787000).
    static let sample = """
        [{"archive":[{"database":{"id":1,"repo-key":1},"id":"15-1","max":"000000010000000000000004","min":"000000010000000000000001"}],\
        "backup":[{"archive":{"start":"000000010000000000000002","stop":"000000010000000000000002"},"backrest":{"format":5,"version":"2.45"},\
        "database":{"id":1,"repo-key":1},"error":false,"info":{"delta":22992374,"repository":{"delta":4522232,"size":4522232},"size":22992374},\
        "label":"20261129-140046F","lsn":{"start":"0/2000028","stop":"0/2000100"},"prior":null,"reference":null,\
        "timestamp":{"start":1795960846,"stop":1795960854},"type":"full"},\
        {"archive":{"start":"000000010000000000000003","stop":"000000010000000000000004"},"backrest":{"format":5,"version":"2.45"},\
        "database":{"id":1,"repo-key":1},"error":false,"info":{"delta":8458,"repository":{"delta":492,"size":4522231},"size":22992374},\
        "label":"20261129-140046F_20261129-140055D","lsn":{"start":"0/3000028","stop":"0/4000050"},"prior":"20261129-140046F",\
        "reference":["20261129-140046F"],"timestamp":{"start":1795960855,"stop":1795960856},"type":"diff"}],\
        "cipher":"none","db":[{"id":1,"repo-key":1,"system-id":7713593072717786927,"version":"15"}],"name":"s",\
        "repo":[{"cipher":"none","key":1,"status":{"code":0,"message":"ok"}}],\
        "status":{"code":0,"lock":{"backup":{"held":false}},"message":"ok"}}]
        """

    @Test("pgBackRest's JSON: each backup's label, type, times, sizes, WAL range and cluster, exactly")
    func parsesInfo() throws {
        let info = try PgBackRestInfo(json: Data(Self.sample.utf8), stanza: "s")
        #expect(info.statusCode == 0 && info.statusMessage == "ok")
        #expect(info.backups.map(\.record.label) == ["20261129-140046F", "20261129-140046F_20261129-140055D"])
        let (full, diff) = (info.backups[0], info.backups[1])
        #expect(full.record.kind == .full && diff.record.kind == .diff)
        #expect(full.systemIdentifier == 7_713_593_072_717_786_927 && !full.hasError)
        #expect(full.record.startedAt == Date(timeIntervalSince1970: 1_795_960_846))
        #expect(full.record.stoppedAt == Date(timeIntervalSince1970: 1_795_960_854))
        #expect(full.record.databaseBytes == 22_992_374 && full.record.repositoryBytes == 4_522_232)
        #expect(diff.record.repositoryBytes == 492, "what the diff added, not the set's size")
        #expect(diff.record.walStart == "000000010000000000000003" && diff.record.walStop == "000000010000000000000004")
        #expect(throws: PgBackRestInfo.Failure.self) {
            try PgBackRestInfo(json: Data(Self.sample.utf8), stanza: "other")
        }
        #expect(throws: PgBackRestInfo.Failure.self) { try PgBackRestInfo(json: Data("ERROR".utf8), stanza: "s") }
    }

    /// The sample, its cluster made `system`, with one more backup that pgBackRest found an error in.
    static func info(system: UInt64, stanza: String = "s") throws -> PgBackRestInfo {
        let errored = """
            {"archive":{"start":"000000010000000000000005","stop":"000000010000000000000005"},"database":{"id":1,"repo-key":1},\
            "error":true,"info":{"delta":1,"repository":{"delta":1,"size":1},"size":1},"label":"20261129-140046F_20261129-150000D",\
            "timestamp":{"start":1795964400,"stop":1795964460},"type":"diff"}
            """
        let json = sample.replacingOccurrences(of: "7713593072717786927", with: String(system))
            .replacingOccurrences(of: "\"type\":\"diff\"}]", with: "\"type\":\"diff\"},\(errored)]")
        return try PgBackRestInfo(json: Data(json.utf8), stanza: stanza)
    }

    @Test(
        "record adds each good backup of this cluster once, skips an errored one and another cluster's, and refuses a stanza with none"
    )
    func recordsGoodBackupsOnce() async throws {
        try await withLedger { db, _ in
            let log = BackupLog(client: db.client)
            #expect(try await log.lastBackupStop() == nil)
            let system = try await log.systemIdentifier()
            #expect(system > 0)
            let info = try Self.info(system: system)
            #expect(info.backups.count == 3)

            let first = try await log.record(info)
            #expect(first.recorded.map(\.label) == ["20261129-140046F", "20261129-140046F_20261129-140055D"])
            #expect(first.skipped.map(\.label) == ["20261129-140046F_20261129-150000D"])
            #expect(try await log.lastBackupStop() == Date(timeIntervalSince1970: 1_795_960_856))

            let again = try await log.record(info)
            #expect(again.recorded.isEmpty && again.alreadyRecorded == 2)
            #expect(try await scalar(db.client, "SELECT count(*) FROM backups") == 2)
            let newest = try await log.newest(limit: 1)
            #expect(newest.map(\.label) == ["20261129-140046F_20261129-140055D"] && newest.first?.kind == .diff)

            // The same repository seen from another cluster (a wrong --database-url or stanza): nothing of it
            // is this database's backup, and saying so is a failure, not a quiet success.
            let foreign = try Self.info(system: system &+ 1)
            let error = try await #require(throws: PgBackRestInfo.Failure.self) { try await log.record(foreign) }
            #expect(error.description.contains("no good backup of this database"), "\(error)")
            #expect(try await scalar(db.client, "SELECT count(*) FROM backups") == 2)
        }
    }
}
