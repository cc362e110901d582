import Foundation

/// Typical form and JSON bodies of both surfaces, and a few malformed ones.
enum BodySeeds {
    static func formSeeds() -> [String: [UInt8]] {
        let stub = "shopledger-stub-receipt%2F1%0Abundle_id%3A+com.memolease.sesac1%0Aenvironment%3A+Stub%0A"
        let texts: [String: String] = [
            "valid-sign-up": "phoneNumber=%2B821012345678&FCMtoken=fcm-1&nick=%EC%83%88%EC%8B%B9"
                + "&birth=1994-11-05T08%3A15%3A30.000Z&email=&gender=1",
            "valid-buy": "product=com.memolease.sesac1.sprout2&receipt=" + stub,
            "valid-equip": "sesac=1&background=2",
            "valid-nick": "nick=%F0%9F%91%A8%E2%80%8D%F0%9F%91%A9%E2%80%8D%F0%9F%91%A7",
            "valid-negative": "gender=-1&sesac=000000007",
            "refused-bad-escape": "nick=%zz",
            "refused-repeated": "sesac=1&sesac=2",
            "refused-invalid-utf8": "nick=%C3%28",
            "refused-no-name": "=1",
        ]
        return texts.mapValues { Array($0.utf8) }
    }

    static func jsonSeeds() -> [String: [UInt8]] {
        let texts: [String: String] = [
            "valid-purchase-signed-transaction": #"{"signedTransaction":"eyJhbGciOiJFUzI1NiJ9.eyJ0In0.c2ln"}"#,
            "valid-purchase-receipt":
                #"{"receipt":"MIAGCSqGSIb3DQEHAqCAMIA=","productId":"com.memolease.sesac1.sprout3"}"#,
            "valid-purchase-escaped": #"{"signedTransaction":"a\/b\u0041"}"#,
            "valid-equipped": #"{"face":1,"background":2}"#,
            "valid-notification": #"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln"}"#,
            "valid-restore": #"{"transactionId":"2000000812345678"}"#,
            "valid-grant": #"{"uid":"alice","kind":"face","index":3,"reason":"ticket 42","transactionId":null}"#,
            "valid-revoke": #"{"reason":"granted by mistake"}"#,
            "valid-profile": #"{"nick":"새싹","gender":1,"email":"a@b.c","phoneNumber":"+821012345678","#
                + #""FCMtoken":"fcm-1","birth":"1994-11-05T08:15:30.000Z","theme":"dark","age":30,"beta":true,"x":null}"#,
            "refused-array": "[1,2]",
            "refused-truncated": #"{"signedTransaction":"eyJ"#,
            "object-nested-profile": #"{"nick":{"a":1}}"#,
        ]
        return texts.mapValues { Array($0.utf8) }
    }
}
