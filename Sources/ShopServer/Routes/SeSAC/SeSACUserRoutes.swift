import HTTPTypes
import Hummingbird
import Ledger

/// The SeSAC-compatible user endpoints: sign-up (`POST /v1/user`), login (`GET /v1/user`) and the shop's
/// view of the user (`GET /v1/user/shop/myinfo`). Auth is the `idtoken` header, checked by the group's ``UserAuthentication``; the status is the contract.
struct SeSACUserRoutes {
    let ledger: LedgerStore
    let body: RequestBody

    func register(on group: RouterGroup<ShopRequestContext>) {
        group.post("v1/user") { request, context in try await signUp(request, uid: context.requireUID()) }
        group.get("v1/user") { _, context in try await userDocument(uid: context.requireUID()) }
        group.get("v1/user/shop/myinfo") { _, context in try await userDocument(uid: context.requireUID()) }
    }

    /// 200 registered, 201 already registered, 202 unusable nickname; 501 a missing or invalid field.
    func signUp(_ request: Request, uid: String) async throws -> SeSACReply {
        let form = try SignUpForm(try await body.form(of: request))
        guard form.hasUsableNick else {
            return SeSACReply(
                .init(code: 202), "the nickname must be 1–\(SignUpForm.nickLength.upperBound) visible characters")
        }
        switch try await ledger.register(uid: uid, profile: try UserProfile(encoding: form)) {
        case .registered: return SeSACReply(.ok, "registered")
        case .alreadyRegistered: return SeSACReply(.created, "already registered")
        }
    }

    /// 200 with the user document; 406 when the user has not signed up.
    func userDocument(uid: String) async throws -> UserDocument {
        guard let summary = try await ledger.accountSummary(of: uid) else {
            throw LedgerError.userNotRegistered(uid)
        }
        return UserDocument(summary)
    }
}

extension UserDocument: ResponseGenerator {
    /// Written by hand (`JSONBody`): the same object the synthesized `Encodable` conformance writes (a
    /// test holds the two equal), fields in declaration order. This is the SeSAC surface's hottest response.
    func response(from request: Request, context: some RequestContext) throws -> Response {
        var body = JSONBody(capacity: 512 + 24 * transactionId.count)
        body.field("_id", _id)
        body.field("__v", __v)
        body.field("uid", uid)
        body.field("phoneNumber", phoneNumber)
        body.field("email", email)
        body.field("FCMtoken", FCMtoken)
        body.field("nick", nick)
        body.field("birth", birth)
        body.field("gender", gender)
        body.field("study", study)
        body.field("comment", comment)
        body.field("reputation", reputation)
        body.field("sesac", sesac)
        body.field("sesacCollection", sesacCollection)
        body.field("background", background)
        body.field("backgroundCollection", backgroundCollection)
        body.field("purchaseToken", purchaseToken)
        body.field("transactionId", transactionId)
        body.field("reviewedBefore", reviewedBefore)
        body.field("reportedNum", reportedNum)
        body.field("reportedUser", reportedUser)
        body.field("dodgepenalty", dodgepenalty)
        body.field("dodgeNum", dodgeNum)
        body.field("ageMin", ageMin)
        body.field("ageMax", ageMax)
        body.field("searchable", searchable)
        body.field("createdAt", createdAt)
        return body.response()
    }
}
