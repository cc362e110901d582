/// The result of `LedgerStore.equip(face:background:for:)`.
public enum EquipOutcome: Sendable, Hashable {
    /// Both items are owned and now equipped.
    case equipped(EquippedItems)
    /// Nothing changed: these items (one or both) are not owned by the user.
    case notOwned([ItemID])
}
