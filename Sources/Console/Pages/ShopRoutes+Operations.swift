import Foundation
import Hummingbird
import Ledger
import Postgres
import Reports

/// `/shop/apple-sync` (what the App Store sync left in the database) and `/shop/ledger` (the standby's
/// status, and the ledger's reconciliation on a button: `Reconciler` with `ReconciliationChecks.all`, the
/// checks `shopledger reconcile` and `GET /api/v1/admin/reconciliation` run).
extension ShopRoutes {
    func registerOperations(on group: RouterGroup<ConsoleContext>) {
        group.get("shop/apple-sync") { _, context -> Response in
            async let summaryRead = syncRecords.summary()
            async let lookupsRead = syncRecords.recentLookups()
            return appleSyncPage(try await summaryRead, lookups: try await lookupsRead, context: context)
        }
        group.get("shop/ledger") { _, context -> Response in
            try await ledgerPage(report: nil, context: context)
        }
        group.post("shop/ledger/reconcile") { _, context -> Response in
            let session = try context.requireSession()
            let report = try await Reconciler(client: client, checks: ReconciliationChecks.all).run()
            let failed = report.failedChecks.map(\.name).joined(separator: ", ")
            try await audit.record(
                "reconcile", by: session.operatorAccount.name, address: context.address, target: "ledger",
                detail: report.passed ? "all \(report.checks.count) checks passed" : "failed: \(failed)")
            return try await ledgerPage(report: report, context: context)
        }
    }

    private func appleSyncPage(
        _ summary: AppleSyncRecords.Summary, lookups: [AppleSyncRecords.Lookup], context: ConsoleContext
    ) -> Response {
        let language = context.language
        func when(_ date: Date?) -> String { date.map(Pages.instant) ?? "—" }
        let rows: [HTML] = lookups.map {
            """
            <tr><th scope="row">\($0.transactionId)</th><td>\($0.environment)</td><td class="num">\($0.attempts)</td>
            <td>\($0.lastOutcome)</td><td>\(Pages.instant($0.lastAttemptAt))</td><td>\(Pages.instant($0.nextAttemptAt))</td></tr>
            """
        }
        let table: HTML =
            lookups.isEmpty
            ? "<p>\(language.pick("None: no unpriced purchase is waiting for Apple.", "없습니다: Apple의 가격을 기다리는 구매가 없습니다."))</p>"
            : """
            <table id="lookups"><thead><tr><th scope="col">\(language.pick("Transaction", "거래"))</th>
            <th scope="col">\(language.pick("Environment", "환경"))</th><th scope="col">\(language.pick("Times asked", "요청 횟수"))</th>
            <th scope="col">\(language.pick("Last answer", "마지막 결과"))</th><th scope="col">\(language.pick("Last asked", "마지막 요청"))</th>
            <th scope="col">\(language.pick("Asks again", "다음 요청"))</th></tr></thead><tbody>\(rows)</tbody></table>
            """
        return Pages.page(
            title: language.pick("App Store sync", "App Store 동기화"), context: context, path: "/shop",
            """
            <p><a href="/shop">\(language.pick("← Shop", "← 상점"))</a></p>
            <p>\(language.pick("The sync's runs are not recorded in the database: each run is written to the server's log, and counted in its /metrics (shopledger_appstore_sync_*). What the database records is what the sync did and what it still has to do:", "동기화 실행 자체는 데이터베이스에 기록되지 않습니다. 실행마다 서버 로그에 남고 /metrics (shopledger_appstore_sync_*)에 집계됩니다. 데이터베이스에는 동기화가 한 일과 남은 일이 기록됩니다:"))</p>
            <dl class="facts">
            <dt>\(language.pick("Purchases without a price", "가격 없는 구매"))</dt><dd>\(summary.unpriced)</dd>
            <dt>\(language.pick("Of those, asked and not priced yet", "그중 요청했으나 아직 가격 없음"))</dt><dd>\(summary.askedUnpriced)</dd>
            <dt>\(language.pick("Last asked", "마지막 요청"))</dt><dd>\(when(summary.lastLookupAt))</dd>
            <dt>\(language.pick("Next asked no earlier than", "다음 요청 (이후)"))</dt><dd>\(when(summary.nextLookupAt))</dd>
            <dt>\(language.pick("Prices learned", "알아낸 가격"))</dt><dd>\(summary.pricesLearned)</dd>
            <dt>\(language.pick("Last price learned", "마지막으로 알아낸 가격"))</dt><dd>\(when(summary.lastPriceLearnedAt))</dd>
            <dt>\(language.pick("App Store notifications stored", "저장된 App Store 알림"))</dt><dd>\(summary.notifications)</dd>
            <dt>\(language.pick("Last notification stored", "마지막 알림 저장"))</dt><dd>\(when(summary.lastNotificationAt))</dd>
            </dl>
            <p>\(language.pick("Notifications are stored once whoever brings them (Apple's delivery or a sync), and refunds found in Apple's refund history are recorded like any refund, so neither says which run found it.", "알림은 누가 가져오든(Apple의 전송 또는 동기화) 한 번만 저장되고, Apple의 환불 내역에서 찾은 환불도 다른 환불과 같이 기록되므로, 어느 실행이 찾았는지는 알 수 없습니다."))</p>
            <h2>\(language.pick("Purchases Apple has not priced yet", "Apple이 아직 가격을 알려 주지 않은 구매"))</h2>
            \(table)
            """)
    }

    private func ledgerPage(report: ReconciliationReport?, context: ConsoleContext) async throws -> Response {
        let language = context.language
        let role = try await StreamingReplication.role(of: client)
        let standby: HTML
        switch role {
        case .standby(let replay):
            standby = """
                <p>\(language.pick("This server's database is a hot standby (in recovery): it replays the primary's WAL.", "이 서버의 데이터베이스는 핫 스탠바이(복구 중)입니다: 주 서버의 WAL을 재생합니다."))</p>
                <dl class="facts"><dt>\(language.pick("Replayed WAL up to", "재생한 WAL 위치"))</dt><dd>\(replay.lsn ?? language.pick("nothing yet", "아직 없음"))</dd>
                <dt>\(language.pick("Last replayed transaction committed", "마지막으로 재생한 트랜잭션 커밋"))</dt><dd>\(replay.lastCommitAt.map(Pages.instant) ?? "—")</dd></dl>
                """
        case .primary(let standbys) where standbys.isEmpty:
            standby = """
                <p>\(language.pick("This server's database is the primary. No standby streams from it (pg_stat_replication is empty, or this database user may not read it: it needs pg_monitor).", "이 서버의 데이터베이스는 주 서버입니다. 스트리밍 중인 스탠바이가 없습니다 (pg_stat_replication이 비어 있거나, 이 데이터베이스 사용자가 읽을 권한(pg_monitor)이 없습니다)."))</p>
                """
        case .primary(let standbys):
            let rows: [HTML] = standbys.map { sender in
                let lag = sender.replayLagSeconds.map { String(format: "%.3f s", $0) } ?? "—"
                return """
                    <tr><th scope="row">\(sender.name)</th><td>\(sender.state)</td><td>\(sender.syncState)</td>
                    <td>\(sender.replayLSN ?? "—")</td><td class="num">\(sender.bytesBehind.map(String.init) ?? "—")</td><td class="num">\(lag)</td></tr>
                    """
            }
            standby = """
                <p>\(language.pick("This server's database is the primary; standbys streaming from it:", "이 서버의 데이터베이스는 주 서버이며, 다음 스탠바이가 스트리밍 중입니다:"))</p>
                <table id="standbys"><thead><tr><th scope="col">\(language.pick("Standby", "스탠바이"))</th>
                <th scope="col">\(language.pick("State", "상태"))</th><th scope="col">\(language.pick("Sync", "동기화 방식"))</th>
                <th scope="col">\(language.pick("Replayed up to", "재생 위치"))</th><th scope="col">\(language.pick("Bytes behind", "뒤처진 바이트"))</th>
                <th scope="col">\(language.pick("Replay lag", "재생 지연"))</th></tr></thead><tbody>\(rows)</tbody></table>
                """
        }
        var result: HTML = ""
        if let report {
            let rows: [HTML] = report.checks.map { check in
                let verdict: HTML =
                    check.passed
                    ? "<span class=\"ok\">\(language.pick("pass", "통과"))</span>"
                    : "<span class=\"error\">\(language.pick("FAIL", "실패")) (\(check.failureCount))</span>"
                let failures: [HTML] = check.failures.map { "<li>\($0.id): \($0.detail)</li>" }
                let failureList: HTML = failures.isEmpty ? "" : "<ul>\(failures)</ul>"
                return """
                    <tr><th scope="row">\(check.name)</th><td>\(verdict)</td><td class="num">\(check.examined)</td>
                    <td>\(check.summary)\(failureList)</td></tr>
                    """
            }
            let verdict: HTML =
                report.passed
                ? "<p class=\"ok\" role=\"status\">\(language.pick("Every check passed.", "모든 검사를 통과했습니다."))</p>"
                : "<p class=\"error\" role=\"status\">\(language.pick("\(report.failedChecks.count) checks failed.", "\(report.failedChecks.count)개 검사가 실패했습니다."))</p>"
            result = """
                <h2>\(language.pick("Reconciliation of \(Pages.instant(report.checkedAt))", "\(Pages.instant(report.checkedAt)) 대사 결과"))</h2>
                \(verdict)
                <table id="checks"><thead><tr><th scope="col">\(language.pick("Check", "검사"))</th>
                <th scope="col">\(language.pick("Result", "결과"))</th><th scope="col">\(language.pick("Examined", "검사 대상 수"))</th>
                <th scope="col">\(language.pick("What it checks, and what failed", "검사 내용과 실패 항목"))</th></tr></thead><tbody>\(rows)</tbody></table>
                """
        }
        return Pages.page(
            title: language.pick("Ledger", "원장"), context: context, path: "/shop",
            """
            <p><a href="/shop">\(language.pick("← Shop", "← 상점"))</a></p>
            <h2>\(language.pick("Standby", "스탠바이"))</h2>
            \(standby)
            <h2>\(language.pick("Reconciliation", "대사"))</h2>
            <p>\(Pages.prose(language.pick("Runs every check of `shopledger reconcile` in one read-only snapshot: the ledger's invariants and the reports' own. It reads all of history, so it takes as long as the CLI does.", "`shopledger reconcile`의 모든 검사를 읽기 전용 스냅샷 하나에서 실행합니다: 원장의 불변 조건과 보고서 자체 검사. 전체 기록을 읽으므로 CLI만큼 걸립니다.")))</p>
            <form method="post" action="/shop/ledger/reconcile" class="row">\(Pages.csrfField(context))
            <button type="submit">\(language.pick("Reconcile the ledger now", "지금 원장 대사 실행"))</button>
            </form>
            \(result)
            """)
    }
}
