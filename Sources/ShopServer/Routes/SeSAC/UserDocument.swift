import APIViews
import Crypto
import Foundation
import Ledger

/// The SeSAC user document (`GET /v1/user`, `GET /v1/user/shop/myinfo`): every field the existing
/// clients decode, always present (they use non-optional Codable fields, so a missing one breaks them).
/// The shop fields come from the ledger; the sign-up fields from the stored profile; the study-matching
/// fields this service does not keep get the values of a new user.
struct UserDocument: Encodable, Sendable {
    let _id: String
    let __v: Int
    let uid: String
    let phoneNumber: String
    let email: String
    let FCMtoken: String
    let nick: String
    let birth: String
    let gender: Int
    let study: String
    let comment: [String]
    let reputation: [Int]
    let sesac: Int
    let sesacCollection: [Int]
    let background: Int
    let backgroundCollection: [Int]
    let purchaseToken: [String]
    let transactionId: [String]
    let reviewedBefore: [String]
    let reportedNum: Int
    let reportedUser: [String]
    let dodgepenalty: Int
    let dodgeNum: Int
    let ageMin: Int
    let ageMax: Int
    let searchable: Int
    let createdAt: String

    /// The profile as the sign-up form stored it; users who registered through the JSON surface have
    /// none of these fields, and get empty values.
    private struct StoredProfile: Decodable {
        var phoneNumber: String?
        var FCMtoken: String?
        var nick: String?
        var birth: String?
        var email: String?
        var gender: Int?
    }

    init(_ summary: AccountSummary) {
        let profile = (try? summary.user.profile.decode(StoredProfile.self)) ?? StoredProfile()
        let uid = summary.user.uid
        _id = Self.documentId(uid)
        __v = 0
        self.uid = uid
        phoneNumber = profile.phoneNumber ?? ""
        email = profile.email ?? ""
        FCMtoken = profile.FCMtoken ?? ""
        nick = profile.nick ?? ""
        birth = profile.birth ?? ""
        gender = profile.gender ?? -1
        study = ""
        comment = []
        reputation = Array(repeating: 0, count: 9)
        sesac = summary.inventory.equipped.face
        sesacCollection = summary.inventory.faces
        background = summary.inventory.equipped.background
        backgroundCollection = summary.inventory.backgrounds
        purchaseToken = []
        transactionId = summary.transactionIds
        reviewedBefore = []
        reportedNum = 0
        reportedUser = []
        dodgepenalty = 0
        dodgeNum = 0
        ageMin = 18
        ageMax = 65
        searchable = 1
        createdAt = Self.timestamp(summary.user.registeredAt)
    }

    /// A stable 24-hex-digit id in the shape of the MongoDB ObjectIds the clients saw, derived from the uid.
    static func documentId(_ uid: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        let digest = SHA256.hash(data: Array(uid.utf8))
        // Written into one buffer: a String per byte, then joined, was 1% of a myinfo's CPU.
        return String(unsafeUninitializedCapacity: 24) { buffer in
            for (index, byte) in digest.prefix(12).enumerated() {
                buffer[2 * index] = digits[Int(byte >> 4)]
                buffer[2 * index + 1] = digits[Int(byte & 0x0f)]
            }
            return 24
        }
    }

    /// The API's one instant format (`ViewJSON.timestamp`).
    static func timestamp(_ date: Date) -> String {
        ViewJSON.timestamp(date)
    }
}
