import Foundation

/// The request bodies of the support endpoints (`SupportRoutes`); their answers are APIViews' views.
package enum SupportBodies {
    /// `POST /api/v1/admin/grants`.
    package struct GrantRequest: Decodable, Sendable {
        let uid: String
        let kind: String
        let index: Int
        let reason: String
        let transactionId: String?
    }

    /// `POST /api/v1/admin/grants/{actionId}/revoke`.
    package struct RevokeRequest: Decodable, Sendable {
        let reason: String
    }
}
