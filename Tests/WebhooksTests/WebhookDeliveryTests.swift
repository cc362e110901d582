import Foundation
import Postgres
import TestSupport
import Testing

@testable import Webhooks

@Suite(
    "Webhooks: signed deliveries to a real receiver, retries, order per user, several workers", .serialized)
struct WebhookDeliveryTests {
    // Delivery is at least once (WebhookDeliveryService): an answer slower than the sender's timeout is
    // a failed attempt, and the event goes again. So the contract is not "each event once" but: every
    // event arrives, every delivery is signed, each user's events first arrive in event order, and a
    // repeat is the same event byte for byte under the same id. The receiver here answers its first three
    // requests after the timeout, as a loaded machine's would (a full run once saw 70 deliveries of 60).
    @Test("every event arrives at least once, signed, first arrivals in event order per user; repeats are identical")
    func deliveredAtLeastOnceInOrder() async throws {
        try await withTestDatabase { db in
            let receiver = WebhookReceiver(secret: testSecret, port: try TestCluster.freePort())
            let store = WebhookStore(client: db.client)
            let endpoint = try await store.addEndpoint(
                url: try WebhookURL(receiver.url, destinations: .publicAndLoopback), events: nil, secret: testSecret,
                actor: "test")
            try await writeGrantEvents(db.client, users: 5, perUser: 12)
            receiver.set(.slowFirst(count: 3, wait: .seconds(1)))
            try await receiver.serving {
                try await withDeliveryWorkers(db, settings: quickSettings(), destinations: .publicAndLoopback) {
                    try await eventually("60 events") { Set(receiver.deliveries.map(\.id)).count >= 60 }
                    try await eventually("the queue empties") {
                        try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0
                    }
                }
            }
            let deliveries = receiver.deliveries
            let ids = Set(deliveries.map(\.id))
            #expect(ids.count == 60, "every event arrived: \(ids.count) of 60")
            #expect(receiver.badSignatures == 0, "every request was signed with the endpoint's secret")
            #expect(outOfOrderUsers(deliveries).isEmpty)
            #expect(deliveries.allSatisfy { $0.type == "support.granted" })
            #expect(WebhookReceiver.alteredRedeliveries(deliveries).isEmpty, "a repeat is the same bytes")
            // The late answers were failed attempts (timeouts), so the sender tried those events again.
            #expect(
                try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE error = 'timeout'") >= 3)
            // The body is the outbox's event: the same id, type and data the admin API shows.
            for id in ids {
                let eventId = try #require(WebhookEvent.eventId(parsing: id))
                let event = try #require(try await store.event(eventId))
                #expect(deliveries.first { $0.id == id }?.body == event.body, "\(id)")
            }
            #expect(
                try await count(
                    db.client, "SELECT count(DISTINCT event_id) FROM webhook_attempts WHERE outcome = 'delivered'")
                    == 60)
            let listed = try #require(try await store.endpoint(endpoint.endpointId))
            #expect(listed.pending == 0 && listed.lastDeliveredAt != nil && listed.failingSince == nil)
        }
    }

    @Test("the receiver down, then 500s, then slower than the timeout: everything arrives once it recovers")
    func outageThenRecovery() async throws {
        try await withTestDatabase { db in
            let receiver = WebhookReceiver(secret: testSecret, port: try TestCluster.freePort())
            _ = try await WebhookStore(client: db.client).addEndpoint(
                url: try WebhookURL(receiver.url, destinations: .publicAndLoopback), events: nil, secret: testSecret,
                actor: "test")
            try await withDeliveryWorkers(db, settings: quickSettings(), destinations: .publicAndLoopback) {
                // Down: nothing listens on the port.
                try await writeGrantEvents(db.client, users: 4, perUser: 5, prefix: "down")
                try await eventually("failed attempts while down") {
                    try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE outcome = 'failed'") >= 8
                }
                // Up, but failing with 500: set before it serves, or a retry due at once could be answered 200.
                receiver.set(.status(500))
                try await receiver.serving {
                    try await writeGrantEvents(db.client, users: 4, perUser: 5, prefix: "err")
                    try await eventually("500s answered") { receiver.requests >= 8 }
                    // Answering after the sender's timeout.
                    receiver.set(.slow(.seconds(3)))
                    let before = receiver.requests
                    try await eventually("slow answers") { receiver.requests >= before + 4 }
                    // The sender counts nothing as delivered (the receiver may yet act on a late answer's event).
                    #expect(
                        try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE outcome = 'delivered'")
                            == 0, "nothing counts as delivered while failing")
                    receiver.set(.ok)
                    try await eventually("all 40 events arrive") { Set(receiver.deliveries.map(\.id)).count >= 40 }
                    try await eventually("the queue empties") {
                        try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0
                    }
                }
            }
            let ids = receiver.deliveries.map(\.id)
            #expect(Set(ids).count == 40)
            #expect(outOfOrderUsers(receiver.deliveries).isEmpty)
            #expect(receiver.badSignatures == 0)
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE outcome = 'failed'") >= 16)
            let timeouts = try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE error = 'timeout'")
            #expect(timeouts >= 1)
            // A slow answer the receiver accepted after the sender gave up is a duplicate with the same id
            // and the same bytes; only such an answer makes one (the down receiver and its 500s record
            // nothing), so there are no more duplicates than timed-out attempts.
            let duplicates = ids.count - Set(ids).count
            #expect(duplicates <= timeouts, "\(duplicates) duplicates, \(timeouts) timeouts")
            #expect(WebhookReceiver.alteredRedeliveries(receiver.deliveries).isEmpty)
        }
    }

    @Test("two workers with pools of their own deliver each event once")
    func twoWorkers() async throws {
        try await withTestDatabase { db in
            let receiver = WebhookReceiver(secret: testSecret, port: try TestCluster.freePort())
            _ = try await WebhookStore(client: db.client).addEndpoint(
                url: try WebhookURL(receiver.url, destinations: .publicAndLoopback), events: nil, secret: testSecret,
                actor: "test")
            try await writeGrantEvents(db.client, users: 20, perUser: 10)
            try await receiver.serving {
                try await withDeliveryWorkers(
                    db, settings: quickSettings(concurrency: 4), workers: 2, destinations: .publicAndLoopback
                ) {
                    try await eventually("200 events") { Set(receiver.deliveries.map(\.id)).count >= 200 }
                    try await eventually("the queue empties") {
                        try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0
                    }
                    // Give a duplicate time to show up.
                    try await Task.sleep(for: .milliseconds(300))
                }
            }
            let ids = receiver.deliveries.map(\.id)
            // On a failure, the attempts say which way a repeat came: a failed attempt the receiver had in
            // fact answered (a timeout), or a claim taken again after its lease.
            let attempts = try await db.client.query(
                "SELECT outcome || ' ' || coalesce(error, '') || ': ' || count(*) FROM webhook_attempts GROUP BY outcome, error"
            ).map { try $0.decode(String.self, at: 0) }
            // Two workers never claim the same delivery at once (SKIP LOCKED): an event arrives twice only
            // when an answer came after the sender's timeout (at least once, as designed), so every
            // duplicate is matched by a timed-out attempt, and is the same bytes.
            let timeouts = try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE error = 'timeout'")
            #expect(Set(ids).count == 200, "\(ids.count) deliveries of \(Set(ids).count) events; attempts: \(attempts)")
            #expect(
                ids.count - Set(ids).count <= timeouts,
                "\(ids.count) deliveries of \(Set(ids).count) events; attempts: \(attempts)")
            #expect(WebhookReceiver.alteredRedeliveries(receiver.deliveries).isEmpty)
            #expect(outOfOrderUsers(receiver.deliveries).isEmpty)
        }
    }

    @Test("a redirect is not followed; an answer's big body is not read; a subscription filters types")
    func redirectsBodiesAndFilters() async throws {
        try await withTestDatabase { db in
            let receiver = WebhookReceiver(secret: testSecret, port: try TestCluster.freePort())
            let store = WebhookStore(client: db.client)
            _ = try await store.addEndpoint(
                url: try WebhookURL(receiver.url, destinations: .publicAndLoopback), events: [.supportGranted],
                secret: testSecret, actor: "test")
            try await receiver.serving {
                receiver.set(.redirect("http://127.0.0.1:\(receiver.port)/elsewhere"))
                // Exact counts below: a timeout no answer outruns however loaded the machine, so that
                // at-least-once delivery repeats nothing.
                try await withDeliveryWorkers(
                    db, settings: quickSettings(timeout: .seconds(20)), destinations: .publicAndLoopback
                ) {
                    try await writeGrantEvents(db.client, users: 1, perUser: 1)
                    try await eventually("a 302 recorded") {
                        try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE status_code = 302") >= 2
                    }
                    #expect(!receiver.paths.contains("/elsewhere"), "the redirect was not followed")
                    receiver.set(.bigBody(8 << 20))
                    try await eventually("delivered despite an 8 MiB answer") { receiver.deliveries.count == 1 }
                    // The receiver has it before the worker records it: wait for the queue to empty.
                    try await eventually("the grant's delivery recorded") {
                        try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0
                    }
                    // A revoke is not subscribed to: no delivery queued.
                    let grant = try await count(db.client, "SELECT max(action_id) FROM support_actions")
                    try await db.client.execute(
                        """
                        INSERT INTO support_actions (kind, uid, item_kind, item_index, revokes, actor, reason)
                        VALUES ('revoke', 'user0', 'face', 1, \(grant), 'test', 'wrong user')
                        """)
                    // The trigger queues in the revoke's own statement: nothing queued, nothing to send.
                    #expect(try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0)
                }
            }
            #expect(
                try await count(db.client, "SELECT count(*) FROM webhook_outbox WHERE type = 'support.revoked'") == 1)
            #expect(try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0)
            #expect(receiver.deliveries.map(\.type) == ["support.granted"])
            let error = try await db.client.query(
                "SELECT error FROM webhook_attempts WHERE status_code = 302 LIMIT 1"
            ).single().decode(String.self, at: 0)
            #expect(error == "redirect_not_followed")
        }
    }

    @Test("a failing endpoint is marked failing; past the window a delivery is given up and the next goes")
    func failingAndGivingUp() async throws {
        try await withTestDatabase { db in
            let receiver = WebhookReceiver(secret: testSecret, port: try TestCluster.freePort())
            let store = WebhookStore(client: db.client)
            let endpoint = try await store.addEndpoint(
                url: try WebhookURL(receiver.url, destinations: .publicAndLoopback), events: nil, secret: testSecret,
                actor: "test")
            try await receiver.serving {
                receiver.set(.status(503))
                try await writeGrantEvents(db.client, users: 1, perUser: 2)
                // Failing, with time to fail 10 times in a row however loaded the machine is.
                try await withDeliveryWorkers(db, settings: quickSettings(), destinations: .publicAndLoopback) {
                    try await eventually("marked failing") {
                        try await store.endpoint(endpoint.endpointId)?.failingSince != nil
                    }
                }
                // Now with a 1 s window: the queued events are given up.
                try await withDeliveryWorkers(
                    db, settings: quickSettings(giveUpAfter: .seconds(1)), destinations: .publicAndLoopback
                ) {
                    try await eventually("the first event given up") {
                        try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE outcome = 'gave_up'")
                            >= 1
                    }
                    receiver.set(.ok)
                    // A new event after the recovery goes out once the given-up ones are off the queue.
                    try await writeGrantEvents(db.client, users: 1, perUser: 1, prefix: "user")
                    try await eventually("the queue empties") {
                        try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0
                    }
                }
            }
            let listed = try #require(try await store.endpoint(endpoint.endpointId))
            #expect(listed.failingSince == nil && listed.consecutiveFailures == 0, "a delivery clears failing")
            let gaveUp = try await count(db.client, "SELECT count(*) FROM webhook_attempts WHERE outcome = 'gave_up'")
            // The two queued while failing were given up, or the second delivered after the recovery; the
            // third was delivered.
            #expect(gaveUp + receiver.deliveries.count == 3 && receiver.deliveries.count >= 1)
        }
    }

    @Test("replay sends one event or a range again under the same ids; a disabled endpoint gets nothing")
    func replayAndDisable() async throws {
        try await withTestDatabase { db in
            let receiver = WebhookReceiver(secret: testSecret, port: try TestCluster.freePort())
            let store = WebhookStore(client: db.client)
            let endpoint = try await store.addEndpoint(
                url: try WebhookURL(receiver.url, destinations: .publicAndLoopback), events: nil, secret: testSecret,
                actor: "test")
            try await writeGrantEvents(db.client, users: 2, perUser: 3)
            try await receiver.serving {
                // Exact counts below: a timeout no answer outruns however loaded the machine, so that
                // at-least-once delivery repeats nothing.
                try await withDeliveryWorkers(
                    db, settings: quickSettings(timeout: .seconds(20)), destinations: .publicAndLoopback
                ) {
                    try await eventually("6 deliveries") { receiver.deliveries.count == 6 }
                    let first = try #require(receiver.deliveries.first?.id)
                    let firstId = try #require(WebhookEvent.eventId(parsing: first))
                    #expect(try await store.replay(.event(firstId), endpointId: nil) == 1)
                    try await eventually("the replayed event again") { receiver.deliveries.count == 7 }
                    #expect(receiver.deliveries.last?.id == first)
                    // The receiver has it before the worker takes it off the queue; a replay skips what is queued.
                    try await eventually("the queue empties") {
                        try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0
                    }
                    let now = Date()
                    let queued = try await store.replay(
                        .range(from: now.addingTimeInterval(-3600), to: now.addingTimeInterval(60), types: nil),
                        endpointId: endpoint.endpointId)
                    #expect(queued == 6)
                    try await eventually("the range again") { receiver.deliveries.count == 13 }
                    #expect(outOfOrderUsers(Array(receiver.deliveries.suffix(6))).isEmpty)
                    try await eventually("the range's deliveries recorded") {
                        try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0
                    }

                    _ = try await store.disableEndpoint(endpoint.endpointId, actor: "test")
                    try await writeGrantEvents(db.client, users: 1, perUser: 2, prefix: "late")
                    // The trigger queues in the events' own statements: nothing queued, nothing to send.
                    #expect(try await count(db.client, "SELECT count(*) FROM webhook_pending") == 0)
                }
            }
            #expect(receiver.deliveries.count == 13, "nothing is queued for or sent to a disabled endpoint")
            await #expect(throws: WebhookError.self) {
                try await store.disableEndpoint(endpoint.endpointId, actor: "t")
            }
            await #expect(throws: WebhookError.self) {
                try await store.replay(.event(1), endpointId: endpoint.endpointId)
            }
            await #expect(throws: WebhookError.self) { try await store.replay(.event(999_999), endpointId: nil) }
        }
    }
}
