import Foundation
import HTTPTypes
import Ledger
import Receipts
import Synchronization
import TestSupport
import Testing

@testable import Shop
@testable import ShopServer

@Suite("Per-user limits")
struct UserLimitTests {
    @Test("refused proofs: past the limit a user is answered 429 (SeSAC 500) with Retry-After, and not verified")
    func refusedProofs() async throws {
        let prover = CountingProver()
        try await withShopServer(
            configure: { $0.refusedProofLimit = RateLimit(count: 3, seconds: 600) }, prover: prover
        ) { client, _ in
            try await client.signUp("bad")
            try await client.signUp("good")
            for _ in 0..<3 {
                let refused = try await client.api(
                    .post, "/api/v1/purchases", uid: "bad", json: ["signedTransaction": "refuse.me.please"])
                #expect(refused.status == .unprocessableContent)
            }
            let limited = try await client.api(
                .post, "/api/v1/purchases", uid: "bad", json: ["signedTransaction": "refuse.me.please"])
            #expect(limited.status == .tooManyRequests && limited.errorCode == "rate_limited")
            // One token back every 600/3 = 200 s, rounded up: 200 at once, less on a machine slow enough
            // that seconds pass between the requests.
            #expect((190...200).contains(Int(limited.headers[.retryAfter] ?? "") ?? 0), "\(limited.headers)")
            let sesac = try await client.sesac(
                .post, "/v1/user/shop/ios", uid: "bad",
                form: [("receipt", "refuse.me.please"), ("product", "com.memolease.sesac1.sprout1")])
            #expect(sesac.status == .internalServerError)
            #expect((190...200).contains(Int(sesac.headers[.retryAfter] ?? "") ?? 0), "\(sesac.headers)")
            #expect(prover.calls == 3, "a limited user's proofs are not verified")
            let other = try await client.api(
                .post, "/api/v1/purchases", uid: "good", json: ["signedTransaction": "refuse.me.please"])
            #expect(other.status == .unprocessableContent, "another user is not limited")
        }
    }

    @Test("1,500 bad proofs at once from one account: at most the limit's tokens are verified, the rest answered 429")
    func parallelRefusedProofs() async throws {
        let prover = GatedRefusingProver()
        let total = 1500
        try await withShopServer(
            configure: { $0.refusedProofLimit = RateLimit(count: 30, seconds: 600) }, prover: prover
        ) { client, _ in
            try await client.signUp("bad")
            let answered = Counter()
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<total {
                    group.addTask {
                        let answer = try await client.api(
                            .post, "/api/v1/purchases", uid: "bad", json: ["signedTransaction": "refuse.me.please"])
                        answered.add()
                        return answer.status
                    }
                }
                // Every request is either answered or held by the prover: only then do refusals come back,
                // as when proofs take longer than requests take to arrive.
                while answered.value + prover.waiting < total { try await Task.sleep(for: .milliseconds(5)) }
                prover.open()
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(prover.calls <= 30, "verified \(prover.calls) of \(total)")
            #expect(statuses.count(where: { $0 == .tooManyRequests }) == total - prover.calls)
            #expect(statuses.count(where: { $0 == .unprocessableContent }) == prover.calls)
        }
    }

    @Test("accepted purchases and their duplicates are not limited by default")
    func acceptedUnlimited() async throws {
        try await withShopServer { client, _ in
            try await client.signUp("buyer")
            let receipt = ServerTest.stubReceipt(product(.face(1)))
            for _ in 0..<60 {
                let answer = try await client.sesac(
                    .post, "/v1/user/shop/ios", uid: "buyer",
                    form: [("receipt", receipt), ("product", product(.face(1)))])
                #expect(answer.status == .ok)
            }
        }
    }
}

/// A count several tasks add to.
final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

/// A prover that refuses everything, each refusal held until the test opens it.
final class GatedRefusingProver: PurchaseOnlyProver {
    private struct State {
        var calls = 0
        var open = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())
    var calls: Int { state.withLock { $0.calls } }
    var waiting: Int { state.withLock { $0.waiters.count } }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state in
                state.calls += 1
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if resumeNow { continuation.resume() }
        }
        throw ReceiptRefusal(.invalidSignature, "refused")
    }
}

/// A prover that refuses everything and counts how often it was asked.
final class CountingProver: PurchaseOnlyProver {
    private let count = Mutex(0)
    var calls: Int { count.withLock { $0 } }

    func prove(receipt: String, productId: String?) async throws(ReceiptRefusal) -> VerifiedTransaction {
        count.withLock { $0 += 1 }
        throw ReceiptRefusal(.invalidSignature, "refused")
    }

}
