import BenchSupport
import Foundation

/// CPU per answered request during one workload, split by who spent it: the `shopledger serve`
/// process, PostgreSQL (all its processes) and this load generator. On a shared machine requests per
/// second move with whatever else runs; CPU per request says what the two cores could sustain, and
/// where a change saved.
struct RequestCPU: Sendable {
    let server: Double
    let database: Double
    let loadGenerator: Double

    /// Microseconds per request, in the order server, database, load generator.
    func micros(per requests: Int) -> [Int] {
        guard requests > 0 else { return [0, 0, 0] }
        return [server, database, loadGenerator].map { Int(($0 * 1e6 / Double(requests)).rounded()) }
    }

    /// Samples the three; `measure` returns the CPU each spent while `body` ran.
    struct Sampler: Sendable {
        let serverPID: Int32
        let postmasterPID: Int32

        init(serverPID: Int32, dataDirectory: String) {
            self.serverPID = serverPID
            self.postmasterPID = ProcessCPU.postmasterPID(dataDirectory: dataDirectory)
        }

        private func sample() -> [Double] {
            [
                ProcessCPU.seconds(of: serverPID) ?? 0, ProcessCPU.postgresSeconds(postmaster: postmasterPID),
                ProcessCPU.rusageSeconds(RUSAGE_SELF.rawValue),
            ]
        }

        func measure<T>(_ body: () async throws -> T) async rethrows -> (T, RequestCPU) {
            let before = sample()
            let result = try await body()
            let spent = zip(sample(), before).map { $0 - $1 }
            return (result, RequestCPU(server: spent[0], database: spent[1], loadGenerator: spent[2]))
        }
    }
}
