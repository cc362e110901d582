import Testing

@testable import ShopServer

/// An alert on a counter's `rate()` or `increase()` needs the series before its first event: the
/// counters with known labels are exported at 0 by a server that has done nothing yet.
@Suite struct MetricsStartingSeriesTests {
    static let fresh = String(decoding: ShopMetrics().registryText(), as: UTF8.self)

    @Test(arguments: [
        #"shop_purchases_total{outcome="recorded"} 0"#,
        #"shop_purchases_total{outcome="conflict"} 0"#,
        #"shop_receipt_refusals_total{reason="invalid_signature"} 0"#,
        #"shop_receipt_refusals_total{reason="untrusted_chain"} 0"#,
        #"shop_receipt_refusals_total{reason="proof_required"} 0"#,
        #"shop_receipt_refusals_total{reason="unknown_product"} 0"#,
        #"shop_http_connections_shed_total{why="refused"} 0"#,
        #"shop_http_connections_shed_total{why="displaced"} 0"#,
        #"shop_rate_limited_total{limit="refused_proofs"} 0"#,
        #"shop_rate_limited_total{limit="refused_notifications"} 0"#,
        #"shop_notifications_total{type="REFUND",outcome="stored"} 0"#,
        #"shop_webhooks_attempts_total{type="purchase.recorded",outcome="gave_up"} 0"#,
        #"shop_appstore_api_errors_total{endpoint="transaction_history",code="timeout"} 0"#,
        #"shop_appstore_sync_runs_total{result="failed"} 0"#,
        #"shop_appstore_sync_failures_total 0"#,
        #"shop_notification_sweep_failures_total 0"#,
        #"shop_google_certificates_fetches_total{result="failed"} 0"#,
    ])
    func exportedAtZero(_ line: String) {
        #expect(Self.fresh.split(separator: "\n").contains { $0 == line }, "\(Self.fresh)")
    }

    @Test("a refusal counted later adds to its zero series, not a second one")
    func countsOnTheSameSeries() {
        let metrics = ShopMetrics()
        metrics.recordRefusal("invalid_signature")
        let lines = String(decoding: metrics.registryText(), as: UTF8.self).split(separator: "\n")
        #expect(
            lines.filter { $0.hasPrefix(#"shop_receipt_refusals_total{reason="invalid_signature"}"#) } == [
                #"shop_receipt_refusals_total{reason="invalid_signature"} 1"#
            ])
    }
}
