import AppStoreServerAPI
import Foundation
import HTTPTypes
import Hummingbird
import Ledger
import Logging
import NIOCore
import NIOHTTP1
import Postgres
import Receipts
import Shop
import Webhooks

/// The one place where errors become HTTP answers, for both surfaces.
///
/// - JSON surface: ``apiError(for:logger:)`` gives `{"error": {"code", "message"}}` with a fitting status.
/// - SeSAC surface: ``sesacReply(for:logger:)`` gives the status the existing clients read (401 token,
///   406 unregistered, 501 bad input, 500 anything else, a per-user limit included, with `Retry-After`)
///   with a small `{"message"}` body.
///
/// Errors nobody expected are logged with their details here and answered without them.
enum ErrorMapping {
    static func apiError(for error: any Error, logger: Logger) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as AuthError:
            return APIError(
                .unauthorized, code: error.code.rawValue, message: error.message,
                headers: [.wwwAuthenticate: "Bearer"])
        case let error as InputError:
            return APIError(error.status, code: error.code, message: error.message)
        case let error as LedgerError:
            switch error.code {
            case .userNotRegistered:
                return APIError(
                    .notFound, code: error.code.rawValue,
                    message: "\(error.message); register with POST /api/v1/me (or the SeSAC POST /v1/user) first")
            case .noSuchGrant, .noSuchPurchase:
                return APIError(.notFound, code: error.code.rawValue, message: error.message)
            case .alreadyRevoked, .alreadyRetired, .itemIndexTaken, .productIdTaken:
                return APIError(.conflict, code: error.code.rawValue, message: error.message)
            default:
                return APIError(.unprocessableContent, code: error.code.rawValue, message: error.message)
            }
        case let error as WebhookError:
            switch error.code {
            case .noSuchEndpoint, .noSuchEvent:
                return APIError(.notFound, code: error.code.rawValue, message: error.message)
            case .alreadyDisabled:
                return APIError(.conflict, code: error.code.rawValue, message: error.message)
            case .invalidInput, .destinationRefused:
                return APIError(.unprocessableContent, code: error.code.rawValue, message: error.message)
            }
        case let error as VerificationBusy:
            return APIError(
                .serviceUnavailable, code: "server_busy", message: error.description, headers: [.retryAfter: "1"])
        case let error as OwnershipNotProven:
            return APIError(.forbidden, code: "proof_required", message: error.description)
        case let error as RestoreError:
            switch error {
            case .namedTransactionTaken:
                return APIError(.conflict, code: error.code, message: error.description)
            case .nothingToRestore, .notAnAppStoreReceipt:
                return APIError(.unprocessableContent, code: error.code, message: error.description)
            }
        case let error as RateLimitedError:
            return APIError(
                .tooManyRequests, code: "rate_limited", message: error.description,
                headers: [.retryAfter: String(error.retryAfterSeconds)])
        case let error as GooglePlayRefusal:
            return APIError(.unprocessableContent, code: error.code.rawValue, message: error.message)
        case let error as GooglePlayUnavailable:
            logger.warning("Google Play unavailable", metadata: ["error": "\(error)"])
            let wait = error.retryAt.map { max(1, Int($0.timeIntervalSinceNow.rounded(.up))) } ?? 5
            return APIError(
                .serviceUnavailable, code: "google_play_unavailable",
                message: "Google Play did not answer in time; nothing was recorded: try again",
                headers: [.retryAfter: String(wait)])
        case is GooglePlayNotConfigured:
            return APIError(
                .notImplemented, code: "google_play_not_configured",
                message: "Google Play is not configured on this server")
        case is AppStoreAPINotConfigured:
            return APIError(
                .notImplemented, code: "app_store_api_not_configured",
                message: "the App Store Server API is not configured on this server")
        case let error as AppStoreServerAPIError:
            return appStoreError(error, logger: logger)
        case let error as ReceiptRefusal:
            return APIError(.unprocessableContent, code: error.reason.rawValue, message: error.message)
        case is RequestTimeoutError, is CancellationError:
            return APIError(
                .serviceUnavailable, code: "request_timeout", message: "the request took too long; try again")
        case let error as PostgresError where error.isUnavailable:
            logger.warning("database unavailable", metadata: ["error": "\(error)"])
            return APIError(
                .serviceUnavailable, code: "database_unavailable", message: "the database is unavailable; try again")
        case let error as PostgresError where error.code == .queryCancelled:
            return APIError(
                .serviceUnavailable, code: "request_timeout", message: "the request took too long; try again")
        case let error as any HTTPResponseError:
            return APIError(error.status, code: Self.code(for: error.status), message: Self.message(for: error))
        case let error as HTTPParserError:
            // Anyone can send a broken body (a chunk size that is not hex, say): the client's mistake, in
            // the request log line as a 400, never an error line that pages the operator.
            return APIError(.badRequest, code: "malformed_http", message: "the request is not valid HTTP: \(error)")
        default:
            logger.error("unexpected error", metadata: ["error": "\(String(reflecting: error))"])
            return APIError(.internalServerError, code: "internal_error", message: "the server failed; try again later")
        }
    }

    static func sesacReply(for error: any Error, logger: Logger) -> SeSACReply {
        switch error {
        case let error as AuthError:
            return SeSACReply(.unauthorized, "Firebase token error: \(error.code.rawValue)")
        case let error as LedgerError where error.code == .userNotRegistered:
            return SeSACReply(.init(code: 406), "unregistered user")
        case let error as LedgerError:
            return SeSACReply(.init(code: 501), "client error: \(error.message)")
        case let error as RateLimitedError:
            // The clients know no 429: their "server error, try later", with the wait for those who read it.
            return SeSACReply(
                .internalServerError, "server error: rate_limited: \(error.description)",
                headers: [.retryAfter: String(error.retryAfterSeconds)])
        case let error as InputError where error.status == .contentTooLarge:
            return SeSACReply(.contentTooLarge, error.message)
        case let error as InputError:
            return SeSACReply(.init(code: 501), "client error: \(error.message)")
        case let error as any HTTPResponseError where error.status.code < 500:
            // The router's 404/405 and the body limit's 413 keep their status.
            return SeSACReply(error.status, error.status.reasonPhrase.lowercased())
        case is HTTPParserError:
            // Below the SeSAC contract: HTTP itself was broken, so HTTP's answer.
            return SeSACReply(.badRequest, "bad request")
        default:
            let api = apiError(for: error, logger: logger)
            return SeSACReply(.internalServerError, "server error: \(api.code)")
        }
    }

    /// Apple's answers: an unknown transaction is 404, a bad id 400; Apple being slow, down or rate
    /// limiting is 503 (try again); anything that did not verify, or otherwise went wrong there, 502.
    static func appStoreError(_ error: AppStoreServerAPIError, logger: Logger) -> APIError {
        switch error.code {
        case _ where error.isNotFound:
            return APIError(
                .notFound, code: "transaction_not_found", message: "the App Store does not know this transaction")
        case .invalidInput:
            return APIError(.badRequest, code: "invalid_transaction_id", message: error.message)
        case .apiError where error.apiErrorCode == AppStoreServerAPIError.APIErrorCode.invalidTransactionId:
            return APIError(
                .badRequest, code: "invalid_transaction_id",
                message: "the App Store says this transaction id is invalid")
        case .rateLimited, .timeout, .transport:
            logger.warning("App Store Server API unavailable", metadata: ["error": "\(error)"])
            var headers: HTTPFields = [:]
            if let retryAt = error.retryAt {
                headers[.retryAfter] = "\(max(1, Int(retryAt.timeIntervalSinceNow.rounded(.up))))"
            }
            return APIError(
                .serviceUnavailable, code: "app_store_unavailable",
                message: "the App Store Server API did not answer in time; try again", headers: headers)
        default:
            logger.error("App Store Server API call failed", metadata: ["error": "\(error)"])
            return APIError(.badGateway, code: "app_store_error", message: "the App Store Server API call failed")
        }
    }

    private static func code(for status: HTTPResponse.Status) -> String {
        switch status {
        case .contentTooLarge: "body_too_large"
        case .notFound: "not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .badRequest: "bad_request"
        default: "http_\(status.code)"
        }
    }

    private static func message(for error: any HTTPResponseError) -> String {
        if let error = error as? HTTPError, let message = error.body { return message }
        if error.status == .contentTooLarge { return "the body is over the server's size limit" }
        return error.status.reasonPhrase.isEmpty ? "request refused" : error.status.reasonPhrase.lowercased()
    }
}

extension PostgresError {
    /// The database could not be reached or had no connection to spare: worth retrying later.
    var isUnavailable: Bool {
        isConnectionError || code == .poolTimeout || code == .poolClosed || isServerTimeout
    }

    /// The server gave up on the statement itself (`statement_timeout`, or a cancel not ours).
    var isServerTimeout: Bool {
        code == .server && sqlState == .queryCanceled
    }
}
