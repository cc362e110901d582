import AppStoreServerAPI
import Foundation
import Ledger
import Receipts

/// "What Apple reports" for a customer: Get Transaction History for one of the user's App Store
/// transactions in each environment they bought in, within a budget (a support page must not wait on
/// Apple past it), each transaction marked as in our ledger or not. Nothing is written: recording what
/// is missing is the user's restore, or the sync's.
public struct AppleHistory: Sendable {
    let api: AppStoreServerAPIClient
    let ledger: LedgerStore
    let budget: Duration

    public init(api: AppStoreServerAPIClient, ledger: LedgerStore, budget: Duration = .seconds(8)) {
        self.api = api
        self.ledger = ledger
        self.budget = budget
    }

    public enum Result: Sendable {
        case noAppStorePurchases
        case answered([(transaction: VerifiedTransaction, inLedger: Bool)])
        case failed(String)
    }

    /// Asks Apple; never throws: a failure or Apple's silence past the budget is a result the page shows.
    public func history(of uid: String) async -> Result {
        do {
            let purchases = try await ledger.purchaseHistory(of: uid).filter { $0.store == .appStore }
            guard !purchases.isEmpty else { return .noAppStorePurchases }
            let known = Set(purchases.map(\.transactionId))
            var firstByEnvironment: [StoreEnvironment: String] = [:]
            for purchase in purchases where firstByEnvironment[purchase.environment] == nil {
                firstByEnvironment[purchase.environment] = purchase.transactionId
            }
            let client = api.within(.now + budget)
            var lines: [(transaction: VerifiedTransaction, inLedger: Bool)] = []
            for (environment, transactionId) in firstByEnvironment.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                let answer = try await client.transactionHistory(transactionId, in: environment)
                lines += answer.transactions.map { ($0, known.contains($0.transactionId)) }
            }
            return .answered(lines)
        } catch {
            return .failed("\(error)")
        }
    }

    static func render(_ result: Result, language: Language) -> HTML {
        switch result {
        case .noAppStorePurchases:
            return
                "<p>\(language.pick("This user has no App Store purchase in the ledger to ask about.", "이 사용자는 원장에 App Store 구매가 없어 조회할 수 없습니다."))</p>"
        case .failed(let message):
            return
                "<p class=\"error\" role=\"alert\">\(language.pick("Apple did not answer in time or refused", "Apple이 제시간에 답하지 않았거나 거부했습니다")): \(message)</p>"
        case .answered(let lines):
            let rows: [HTML] = lines.map { line in
                let t = line.transaction
                return """
                    <tr><td>\(t.transactionId)</td><td>\(t.originalTransactionId)</td><td>\(t.productId)</td>
                    <td>\(Pages.instant(t.purchaseDate))</td><td class="num">\(Pages.money(milli: t.priceMilli, currency: t.currency))</td>
                    <td>\(t.revocationDate.map(Pages.instant))</td>
                    <td>\(line.inLedger ? language.pick("yes", "예") : language.pick("no", "아니요"))</td></tr>
                    """
            }
            return """
                <table><thead><tr><th scope="col">\(language.pick("Transaction", "거래"))</th><th scope="col">\(language.pick("Original", "원거래"))</th>
                <th scope="col">\(language.pick("Product", "상품"))</th><th scope="col">\(language.pick("Purchased", "구매 시각"))</th>
                <th scope="col">\(language.pick("Price", "가격"))</th><th scope="col">\(language.pick("Revoked", "취소 시각"))</th>
                <th scope="col">\(language.pick("In our ledger", "원장에 있음"))</th></tr></thead><tbody>\(rows)</tbody></table>
                """
        }
    }
}
