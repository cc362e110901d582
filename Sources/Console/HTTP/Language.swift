import Foundation

/// The console's two languages. The browser's `Accept-Language` picks one; a cookie the language switch
/// sets overrides it. The operators are Korean: Korean when the browser names neither.
public enum Language: String, Sendable, Hashable, CaseIterable {
    case ko
    case en

    /// `text` in this language: `language.pick("Customers", "고객")`.
    func pick(_ english: String, _ korean: String) -> String {
        self == .en ? english : korean
    }

    /// The first of ko and en the header accepts, by its q-values (RFC 9110 §12.5.4); Korean when
    /// neither is named.
    static func negotiate(acceptLanguage header: String?) -> Language {
        guard let header else { return .ko }
        var best: (language: Language, q: Double)?
        for (position, part) in header.split(separator: ",").enumerated() {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let tag = pieces.first?.lowercased() else { continue }
            var q = 1.0
            for parameter in pieces.dropFirst() where parameter.lowercased().hasPrefix("q=") {
                q = Double(parameter.dropFirst(2)) ?? 0
            }
            let primary = tag.split(separator: "-").first.map(String.init) ?? tag
            guard q > 0, let language = Language(rawValue: primary) else { continue }
            // Equal q: the one named first (its position breaks the tie).
            let score = q - Double(position) * 1e-6
            if score > (best?.q ?? -1) { best = (language, score) }
        }
        return best?.language ?? .ko
    }
}
