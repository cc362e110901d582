import GooglePlay

/// Google Play beside the App Store (docs/google-play.md): the Developer API client's settings, the
/// request budget of a verification, the period of the voided-purchases read and acknowledgement
/// retries, and who may push real-time developer notifications.
public struct GooglePlaySettings: Sendable {
    public var api: GooglePlayConfiguration
    /// The longest Google's purchase answer may take inside a purchase request (cut to the request's
    /// time left less the ledger's reserve); then 503 `google_play_unavailable`.
    public var verificationBudget: Duration
    /// The longest a new purchase's order lookup (its price) may take inside its request (cut likewise);
    /// then the purchase stays unpriced and the sync prices it.
    public var priceBudget: Duration
    /// How often the server reads Google's voided purchases and retries owed acknowledgements; nil: never
    /// (run `shopledger google sync` instead).
    public var syncInterval: Duration?
    /// How far back the first voided-purchases read of a server looks (Google keeps 30 days).
    public var syncLookBack: Duration
    /// Push notifications; nil: `POST /api/v1/notifications/google-play` answers 501.
    public var push: Push?

    public struct Push: Sendable {
        /// The audience set on the push subscription (the token's `aud`), usually the endpoint's URL.
        public var audience: String
        /// The service account the subscription pushes as (the token's `email`).
        public var serviceAccountEmail: String
        /// Google's OAuth certificates (`oauth2/v1/certs`): fetched from a URL and refreshed, or a file.
        public var certificates: GoogleCertificateStore

        public init(audience: String, serviceAccountEmail: String, certificates: GoogleCertificateStore) {
            self.audience = audience
            self.serviceAccountEmail = serviceAccountEmail
            self.certificates = certificates
        }
    }

    /// Google's OAuth 2.0 certificates in the `{kid: PEM certificate}` shape the certificate store reads.
    public static let googleCertificatesURL = "https://www.googleapis.com/oauth2/v1/certs"

    public init(
        api: GooglePlayConfiguration, verificationBudget: Duration = .seconds(6), priceBudget: Duration = .seconds(2),
        syncInterval: Duration? = nil, syncLookBack: Duration = .seconds(3 * 86_400), push: Push? = nil
    ) {
        self.api = api
        self.verificationBudget = verificationBudget
        self.priceBudget = priceBudget
        self.syncInterval = syncInterval
        self.syncLookBack = syncLookBack
        self.push = push
    }
}
