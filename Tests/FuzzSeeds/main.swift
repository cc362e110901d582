import Crypto
import Foundation
import FuzzTargets
import TestSupport
import X509
import _CryptoExtras

// fuzz-seeds [FUZZ_DIR]: makes the fuzz PKI (`FUZZ_DIR/pki`, default `Fuzz/pki`) and the seed corpora
// (`FUZZ_DIR/corpus/<target>/`) from the test PKIs, then runs every seed through the harness to check that
// the `valid-*` seeds are accepted and the `refused-*` ones refused. Run once and commit what it wrote;
// running it again makes a new PKI (fresh keys) and new seeds (docs/testing.md, "Fuzzing").

let directory = URL(fileURLWithPath: CommandLine.arguments.dropFirst().first ?? "Fuzz", isDirectory: true)
let validity = SeedDates.pkiStart...SeedDates.pkiEnd
let appStorePKI = try TestPKI(
    .init(
        rootName: "ShopLedger Fuzz Root CA", leafNotBefore: SeedDates.pkiStart, leafNotAfter: SeedDates.pkiEnd,
        caValidity: validity))
let receiptPKI = try TestReceiptPKI(
    .init(
        rootName: "ShopLedger Fuzz Receipt Root", leafNotBefore: SeedDates.pkiStart, leafNotAfter: SeedDates.pkiEnd,
        caValidity: validity))
let googleKey = try GoogleTestKey(notValidBefore: SeedDates.pkiStart, notValidAfter: SeedDates.pkiEnd)

let pkiDirectory = directory.appendingPathComponent("pki", isDirectory: true)
try FileManager.default.createDirectory(at: pkiDirectory, withIntermediateDirectories: true)
try Data(TestPKI.der(appStorePKI.root)).write(to: pkiDirectory.appendingPathComponent(FuzzPKI.appStoreRootFile))
try Data(TestPKI.der(receiptPKI.root)).write(to: pkiDirectory.appendingPathComponent(FuzzPKI.receiptRootFile))
try googleKey.certificateJSON.write(to: pkiDirectory.appendingPathComponent(FuzzPKI.googleCertificatesFile))

let corpora: [FuzzTarget: [String: [UInt8]]] = [
    .classicReceipt: ClassicReceiptSeeds(pki: receiptPKI).seeds(),
    .signedTransaction: JWSSeeds(pki: appStorePKI).transactionSeeds(),
    .notification: JWSSeeds(pki: appStorePKI).notificationSeeds(),
    .stubReceipt: StubSeeds.seeds(),
    .firebaseToken: try FirebaseSeeds(key: googleKey).seeds(),
    .formBody: BodySeeds.formSeeds(),
    .jsonBody: BodySeeds.jsonSeeds(),
]

let harness = try FuzzHarness(pki: try FuzzPKI(directory: pkiDirectory))
var problems: [String] = []
for target in FuzzTarget.allCases {
    let folder = directory.appendingPathComponent("corpus/\(target.rawValue)", isDirectory: true)
    try? FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    for (name, bytes) in (corpora[target] ?? [:]).sorted(by: { $0.key < $1.key }) {
        try Data(bytes).write(to: folder.appendingPathComponent(name))
        let outcome = harness.runBlocking(target, bytes)
        print("\(target.rawValue)/\(name): \(bytes.count) bytes, \(outcome)")
        if name.hasPrefix("valid-"), outcome != .accepted {
            problems.append("\(target.rawValue)/\(name) was \(outcome)")
        }
        if name.hasPrefix("refused-"), outcome == .accepted {
            problems.append("\(target.rawValue)/\(name) was accepted")
        }
        if bytes.count > target.maxLength { problems.append("\(target.rawValue)/\(name) is over -max_len") }
    }
}
if !problems.isEmpty {
    print("fuzz-seeds: these seeds are not what their names say:\n  " + problems.joined(separator: "\n  "))
    exit(1)
}
print("fuzz-seeds: wrote \(pkiDirectory.path) and \(corpora.values.map(\.count).reduce(0, +)) seeds")
