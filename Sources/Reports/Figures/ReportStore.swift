/// The stores a report splits revenue by, as the ledger names them (`purchases.store`), with the
/// names the reports show and their order: the App Store, Google Play, then any other (the stub
/// store of tests) by code.
public enum ReportStore {
    public static let appStore = "app_store"
    public static let googlePlay = "google_play"

    /// `App Store`, `Google Play`, `Stub`; another code as it is.
    public static func name(_ store: String) -> String {
        switch store {
        case appStore: "App Store"
        case googlePlay: "Google Play"
        case "stub": "Stub"
        default: store
        }
    }

    /// A sort key: the App Store, Google Play, then the others by code.
    static func order(_ store: String) -> (Int, String) {
        switch store {
        case appStore: (0, "")
        case googlePlay: (1, "")
        default: (2, store)
        }
    }
}
