import ArgumentParser
import Foundation
import Reports

extension ReportOutputOptions {
    /// `--reporting-currency` and `--fx-rates` come together, the currency a 3-letter code.
    func validateReportingCurrency() throws {
        switch (reportingCurrency, fxRates) {
        case (nil, nil): return
        case (_?, nil): throw ValidationError("--reporting-currency needs --fx-rates FILE (the rates to convert by).")
        case (nil, _?):
            throw ValidationError("--fx-rates needs --reporting-currency CODE (the currency to convert to).")
        case (let code?, _?):
            guard FXRates.isCurrencyCode(code) else {
                throw ValidationError("--reporting-currency '\(code)' is not a 3-letter currency code such as USD.")
            }
        }
    }

    /// The rates file read and parsed (nil without `--reporting-currency`): before the database is
    /// touched, so a bad file refuses the report with nothing written.
    func reportingCurrencyRates() throws -> ReportingCurrency? {
        guard let code = reportingCurrency, let path = fxRates else { return nil }
        let bytes: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            bytes = try handle.read(upToCount: FXRates.maximumBytes + 1) ?? Data()
        } catch {
            throw ReportError(
                .invalidFXRates, "cannot read --fx-rates \(path): \((error as NSError).localizedDescription)")
        }
        return ReportingCurrency(rates: try FXRates.parse(Array(bytes), fileName: path, reportingCurrency: code))
    }
}
