import Foundation
import Ledger
import Postgres
import Receipts

/// The statement `LedgerStore.recordPurchase` sends for a new purchase, read back from the server
/// rather than copied from the code: its text from `pg_prepared_statements` of the session that ran
/// it, its parameters as the server logged them. Which parameters vary per call is found by
/// matching the marker values the capturing call used.
public struct PurchaseStatement: Sendable {
    public let sql: String
    /// Text of each parameter as the server received it, `$1` first.
    public let parameters: [String]
    /// Positions (0-based) holding the transaction id (and the original transaction id), the uid and
    /// the product id.
    public let transactionIdPositions: [Int]
    public let uidPosition: Int
    public let productPosition: Int

    /// Records one purchase through a one-connection client (so the session is known), with
    /// statement logging on, and reads the statement back.
    public static func capture(
        url: String, log: String, transaction: VerifiedTransaction, uid: String
    ) async throws -> PurchaseStatement {
        let client = PostgresClient(
            configuration: .init(connection: .init(url: url), minimumConnections: 0, maximumConnections: 1))
        do {
            let statement = try await capture(client: client, log: log, transaction: transaction, uid: uid)
            await client.shutdown()
            return statement
        } catch {
            await client.shutdown()
            throw error
        }
    }

    private static func capture(
        client: PostgresClient, log: String, transaction: VerifiedTransaction, uid: String
    ) async throws -> PurchaseStatement {
        let before = (try? String(contentsOfFile: log, encoding: .utf8))?.utf8.count ?? 0
        try await client.query("SET log_min_duration_statement = 0")
        let outcome = try await LedgerStore(client: client).recordPurchase(transaction, for: uid)
        try await client.query("RESET log_min_duration_statement")
        guard case .recorded = outcome else { throw BenchError("capturing purchase not recorded: \(outcome)") }
        let statements = try await client.query(
            "SELECT statement FROM pg_prepared_statements WHERE statement LIKE 'WITH input AS%'")
        guard statements.count == 1 else {
            throw BenchError("expected one prepared purchase statement, found \(statements.count)")
        }
        let sql = try statements.single().decode(String.self, at: 0)

        try await Task.sleep(for: .milliseconds(200))  // let the logging collector write
        let data = (try? Data(contentsOf: URL(fileURLWithPath: log))) ?? Data()
        let text = String(decoding: data.dropFirst(before), as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let executeLine = lines.firstIndex(where: { $0.contains(" execute ") && $0.contains("WITH input AS") }),
            let detail = lines[executeLine...].first(where: { $0.contains("DETAIL:  parameters: ") }),
            let range = detail.range(of: "DETAIL:  parameters: ")
        else { throw BenchError("the purchase statement's parameters were not found in \(log)") }
        let parameters = try parseParameters(String(detail[range.upperBound...]))
        func positions(of value: String) -> [Int] { parameters.indices.filter { parameters[$0] == value } }
        let transactionIds = positions(of: transaction.transactionId)
        guard !transactionIds.isEmpty, let uidPosition = positions(of: uid).first,
            let productPosition = positions(of: transaction.productId).first
        else { throw BenchError("could not place the marker values among the parameters \(parameters)") }
        return PurchaseStatement(
            sql: sql, parameters: parameters, transactionIdPositions: transactionIds, uidPosition: uidPosition,
            productPosition: productPosition)
    }

    /// Parses `$1 = 'text', $2 = NULL, …` as PostgreSQL logs bind parameters (quotes doubled).
    public static func parseParameters(_ text: String) throws -> [String] {
        var values: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            guard rest.hasPrefix("$"), let equals = rest.range(of: " = ") else {
                throw BenchError("bad parameter list: \(rest.prefix(40))")
            }
            rest = rest[equals.upperBound...]
            if rest.hasPrefix("NULL") {
                throw BenchError("parameter $\(values.count + 1) is NULL; pgbench cannot bind NULL")
            }
            guard rest.hasPrefix("'") else { throw BenchError("bad parameter value: \(rest.prefix(40))") }
            rest = rest.dropFirst()
            var value = ""
            while let quote = rest.firstIndex(of: "'") {
                value += rest[..<quote]
                rest = rest[rest.index(after: quote)...]
                if rest.hasPrefix("'") {
                    value += "'"
                    rest = rest.dropFirst()
                } else {
                    break
                }
            }
            values.append(value)
            if rest.hasPrefix(", ") { rest = rest.dropFirst(2) }
        }
        return values
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
