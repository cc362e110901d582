import Foundation
import Ledger
import Postgres
import Receipts

/// The statement `LedgerStore.recordPurchase` sends for a new purchase, as the ledger builds it
/// (`LedgerStore.newPurchaseStatement`), with its parameters in the text form the server receives.
/// Which parameters vary per call is found by matching the transaction's and user's values.
public struct PurchaseStatement: Sendable {
    public let sql: String
    /// Text of each parameter as the server receives it, `$1` first.
    public let parameters: [String]
    /// Positions (0-based) holding the transaction id (and the original transaction id), the uid and
    /// the product id.
    public let transactionIdPositions: [Int]
    public let uidPosition: Int
    public let productPosition: Int

    public init(transaction: VerifiedTransaction, uid: String) throws {
        let query = LedgerStore.newPurchaseStatement(transaction, for: uid)
        let parameters = try query.binds.enumerated().map { index, bind in
            switch bind.value {
            case .text(let text): return text
            case .binary(let bytes): return "\\x" + bytes.map { String(format: "%02x", $0) }.joined()
            case .null: throw BenchError("parameter $\(index + 1) is NULL; pgbench cannot bind NULL")
            }
        }
        func positions(of value: String) -> [Int] { parameters.indices.filter { parameters[$0] == value } }
        let transactionIds = positions(of: transaction.transactionId)
        guard !transactionIds.isEmpty, let uidPosition = positions(of: uid).first,
            let productPosition = positions(of: transaction.productId).first
        else { throw BenchError("could not place the marker values among the parameters \(parameters)") }
        self.sql = query.sql
        self.parameters = parameters
        self.transactionIdPositions = transactionIds
        self.uidPosition = uidPosition
        self.productPosition = productPosition
    }

    /// One pgbench script per product: the statement with `$n` written as pgbench variables (which
    /// pgbench in `-M prepared` sends back as the same `$n`, so the server sees the same text), a
    /// unique transaction id per call (`base + client_id × 10⁹ + call number`) and a random user of
    /// `uids`. The product cannot be computed in pgbench, so each script binds another one.
    public func pgbenchScripts(
        products: [String], uids: ClosedRange<Int>, base: Int
    ) -> (scripts: [String], defines: [String: String]) {
        var defines: [String: String] = ["n": "0", "base": String(base)]
        for (index, value) in parameters.enumerated() where !varies(index) { defines["c\(index + 1)"] = value }
        for (index, product) in products.enumerated() { defines["product\(index)"] = product }
        let scripts = products.indices.map { product in
            var body = sql
            // Highest numbers first, so $1 never eats the start of $12.
            for index in parameters.indices.reversed() {
                let variable: String
                if transactionIdPositions.contains(index) {
                    variable = ":tid"
                } else if index == uidPosition {
                    variable = ":uid"
                } else if index == productPosition {
                    variable = ":product\(product)"
                } else {
                    variable = ":c\(index + 1)"
                }
                body = body.replacingOccurrences(of: "$\(index + 1)", with: variable)
            }
            return """
                \\set n :n + 1
                \\set tid :base + :client_id * 1000000000 + :n
                \\set uid random(\(uids.lowerBound), \(uids.upperBound))
                \(body);

                """
        }
        return (scripts, defines)
    }

    /// The same statement through the Postgres module, bypassing `LedgerStore` (no validation, no
    /// result decoding): every parameter as text of unknown type, as pgbench sends them.
    public func query(transactionId: String, uid: String, product: String) -> PostgresQuery {
        var binds = parameters.map { PostgresBind.text($0) }
        for index in transactionIdPositions { binds[index] = .text(transactionId) }
        binds[uidPosition] = .text(uid)
        binds[productPosition] = .text(product)
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    private func varies(_ index: Int) -> Bool {
        transactionIdPositions.contains(index) || index == uidPosition || index == productPosition
    }
}
