import Postgres

extension LedgerStore {
    /// Equips a face and a background, both of which the user must own; otherwise nothing changes
    /// and the outcome names the items not owned.
    ///
    /// One statement: the ownership rows are read `FOR SHARE`, so a refund revoking one of them
    /// either commits first (and the equip is refused) or waits for the equip and then un-equips.
    ///
    /// - Throws: `LedgerError(.userNotRegistered)` or `LedgerError(.noSuchItem)` (nothing written).
    public func equip(face: Int, background: Int, for uid: String) async throws -> EquipOutcome {
        try Validation.uid(uid)
        for item in [ItemID.face(face), .background(background)] where !(0...Int(Int16.max)).contains(item.index) {
            throw LedgerError(.noSuchItem, "the catalog has no \(item)")
        }
        let row = try await client.query(
            """
            WITH input AS (
                SELECT \(uid)::text AS uid, \(face)::smallint AS face, \(background)::smallint AS background
            ),
            account AS (SELECT u.uid FROM users u JOIN input i USING (uid)),
            face_item AS (SELECT 1 FROM catalog_items c, input i WHERE c.kind = 'face' AND c.item_index = i.face),
            background_item AS (
                SELECT 1 FROM catalog_items c, input i WHERE c.kind = 'background' AND c.item_index = i.background
            ),
            face_owned AS (
                SELECT 1 FROM grants g, input i
                WHERE g.uid = i.uid AND g.item_kind = 'face' AND g.item_index = i.face AND g.owned
                FOR SHARE OF g
            ),
            background_owned AS (
                SELECT 1 FROM grants g, input i
                WHERE g.uid = i.uid AND g.item_kind = 'background' AND g.item_index = i.background AND g.owned
                FOR SHARE OF g
            ),
            equipped AS (
                UPDATE users u SET equipped_face = i.face, equipped_background = i.background, updated_at = now()
                FROM input i
                WHERE u.uid = i.uid AND EXISTS (SELECT 1 FROM face_owned) AND EXISTS (SELECT 1 FROM background_owned)
                RETURNING 1
            )
            SELECT EXISTS (SELECT 1 FROM account), EXISTS (SELECT 1 FROM face_item), EXISTS (SELECT 1 FROM background_item),
                   EXISTS (SELECT 1 FROM face_owned), EXISTS (SELECT 1 FROM background_owned), EXISTS (SELECT 1 FROM equipped)
            """
        ).single()
        let (registered, faceExists, backgroundExists, faceOwned, backgroundOwned, equipped) =
            try row.decode((Bool, Bool, Bool, Bool, Bool, Bool).self)
        guard registered else { throw LedgerError.userNotRegistered(uid) }
        let missing = [(ItemID.face(face), faceExists), (.background(background), backgroundExists)].filter { !$0.1 }
        if !missing.isEmpty {
            throw LedgerError(
                .noSuchItem, "the catalog has no " + missing.map(\.0.description).joined(separator: " and no "))
        }
        if equipped { return .equipped(EquippedItems(face: face, background: background)) }
        let notOwned = [(ItemID.face(face), faceOwned), (.background(background), backgroundOwned)].filter { !$0.1 }
            .map(\.0)
        return .notOwned(notOwned)
    }
}
