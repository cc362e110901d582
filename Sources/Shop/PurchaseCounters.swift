/// What the desk counts (the server's metrics).
package protocol PurchaseCounters: Sendable {
    /// A purchase request's outcome: `recorded`, `duplicate` or `conflict`.
    func recordPurchase(_ outcome: String)
    /// A refused proof or purchase, by its reason code.
    func recordRefusal(_ reason: String)
    /// A request turned away by a per-user limit, by the limit's name.
    func recordRateLimited(_ limit: String)
}
