import Foundation
import Ledger

/// An instant from `2025-03-09T23:30:00Z`.
public func instant(_ text: String) -> Date {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    guard let date = formatter.date(from: text) else { fatalError("bad instant \(text)") }
    return date
}

/// Product ids as the catalog migration seeds them.
public func productId(_ item: ItemID) -> String {
    switch item.kind {
    case .face: "com.memolease.sesac1.sprout\(item.index)"
    case .background: "com.memolease.sesac1.background\(item.index)"
    }
}
