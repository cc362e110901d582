import BuildInfo
import Postgres
import Prometheus
import Shop
import Synchronization

/// The service's Prometheus metrics, in a registry of its own (no global metrics system), served at
/// `GET /metrics`:
///
/// - `http_requests_total{route,method,status}` and `http_request_duration_seconds{route}` (histogram);
/// - `shop_purchases_total{outcome}`: recorded, duplicate, conflict;
/// - `shop_receipt_refusals_total{reason}`: proofs refused, by the prover's reason;
/// - `shop_notifications_total{type,outcome}`: notifications stored or duplicate, `refused` when unverifiable;
/// - `shop_db_pool_connections{state}` (open, idle, leased) and `shop_db_pool_waiting`, read at scrape time;
/// - `shop_http_connections{state}` (open; receiving, a request's body still arriving; busy, a whole
///   request being answered), read at scrape time, and
///   `shop_http_connections_shed_total{why}`: displaced or refused at the connection limit;
/// - `shop_rate_limited_total{limit}`: requests turned away by a per-user limit;
/// - `shop_backup_last_success_timestamp_seconds`: when the newest recorded backup ended
///   (ShopMetrics+Backups.swift);
/// - `shopledger_build_info{version,commit}` 1, and the standard `process_*` metrics read at scrape time
///   (ShopMetrics+Process.swift).
///
/// Counters with a known set of labels are exported at 0 from the start (ShopMetrics+StartingSeries.swift).
public final class ShopMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    /// The CPU seconds already added to `process_cpu_seconds_total`: a Prometheus counter only goes up
    /// by increments, and `/proc` gives the total.
    let cpuSecondsCounted = Mutex<Double>(0)
    /// Each route's request counter and histogram, looked up in the registry once: the registry's own
    /// look-up (labels built, matched under its lock) was 2% of a myinfo's CPU.
    private let requestMetrics = Mutex<[RequestKey: RequestMetrics]>([:])

    private struct RequestKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private struct RequestMetrics {
        let count: Counter
        let duration: DurationHistogram
    }

    static let latencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5),
        .seconds(5), .seconds(10),
    ]

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        registry.makeGauge(
            descriptor: Self.buildInfo, labels: [("version", BuildInfo.version), ("commit", BuildInfo.commit)]
        ).set(to: 1)
        registerStartingSeries()
    }

    func recordRequest(route: String, method: String, status: Int, duration: Duration) {
        let key = RequestKey(route: route, method: method, status: status)
        let metrics =
            requestMetrics.withLock { $0[key] }
            ?? {
                let made = RequestMetrics(
                    count: registry.makeCounter(
                        descriptor: Self.requests,
                        labels: [("route", route), ("method", method), ("status", String(status))]),
                    duration: registry.makeDurationHistogram(
                        descriptor: Self.requestDuration, labels: [("route", route)], buckets: Self.latencyBuckets))
                requestMetrics.withLock { $0[key] = made }
                return made
            }()
        metrics.count.increment()
        metrics.duration.record(duration)
    }

    package func recordPurchase(_ outcome: String) {
        registry.makeCounter(descriptor: Self.purchases, labels: [("outcome", outcome)]).increment()
    }

    package func recordRefusal(_ reason: String) {
        registry.makeCounter(descriptor: Self.refusals, labels: [("reason", reason)]).increment()
    }

    /// A connection closed to make room (`displaced`: it was waiting for a request) or turned away
    /// (`refused`: every connection was busy).
    func recordShedConnection(_ why: String) {
        registry.makeCounter(descriptor: Self.shedConnections, labels: [("why", why)]).increment()
    }

    /// A request turned away by a per-user limit (`restore`, `refused_proofs`).
    package func recordRateLimited(_ limit: String) {
        registry.makeCounter(descriptor: Self.rateLimited, labels: [("limit", limit)]).increment()
    }

    func recordNotification(type: String, outcome: String) {
        registry.makeCounter(descriptor: Self.notifications, labels: [("type", type), ("outcome", outcome)]).increment()
    }

    /// The exposition text, with the pool and connection gauges read now.
    func exposition(
        pool: PostgresClient.Statistics, connections: (open: Int, receiving: Int, busy: Int)? = nil
    ) -> [UInt8] {
        if let connections {
            registry.makeGauge(descriptor: Self.connections, labels: [("state", "open")]).set(
                to: Double(connections.open))
            registry.makeGauge(descriptor: Self.connections, labels: [("state", "receiving")]).set(
                to: Double(connections.receiving))
            registry.makeGauge(descriptor: Self.connections, labels: [("state", "busy")]).set(
                to: Double(connections.busy))
        }
        for (state, value) in [("open", pool.open), ("idle", pool.idle), ("leased", pool.leased)] {
            registry.makeGauge(descriptor: Self.poolConnections, labels: [("state", state)]).set(to: Double(value))
        }
        registry.makeGauge(descriptor: Self.poolWaiting).set(to: Double(pool.waiting))
        recordProcessMetrics()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }

    /// The registry as it stands, without reading the scrape-time gauges (tests).
    func registryText() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }

    private static var requests: MetricNameDescriptor {
        MetricNameDescriptor(
            metricName: "http_requests", unitName: "total",
            helpText: "HTTP requests by route template, method and status.")
    }
    private static var requestDuration: MetricNameDescriptor {
        MetricNameDescriptor(
            metricName: "http_request_duration", unitName: "seconds",
            helpText: "HTTP request latency by route template.")
    }
    static var purchases: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", metricName: "purchases", unitName: "total",
            helpText: "Purchase recordings by outcome: recorded, duplicate, conflict.")
    }
    static var refusals: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", metricName: "receipt_refusals", unitName: "total",
            helpText: "Purchase proofs refused, by the prover's reason.")
    }
    static var notifications: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", metricName: "notifications", unitName: "total",
            helpText: "Store notifications by type and outcome: stored, duplicate, refused.")
    }
    static var shedConnections: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "http", metricName: "connections_shed", unitName: "total",
            helpText: "Connections closed at the connection limit: displaced (waiting) or refused (all busy).")
    }
    private static var connections: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "http", metricName: "connections", unitName: "",
            helpText: "Open HTTP connections, and those with a request in progress.")
    }
    static var rateLimited: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", metricName: "rate_limited", unitName: "total",
            helpText: "Requests turned away by a per-user limit, by limit.")
    }
    private static var poolConnections: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "db_pool", metricName: "connections", unitName: "",
            helpText: "Database pool connections by state.")
    }
    private static var poolWaiting: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "shop", subsystem: "db_pool", metricName: "waiting", unitName: "",
            helpText: "Requests waiting for a database connection.")
    }
}

extension ShopMetrics: PurchaseCounters {}
