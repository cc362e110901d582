import Hummingbird

/// Turns every error a route throws (and the router's own 404/405) into its surface's answer, before the
/// router's default conversion: JSON `{"error"}` bodies on the JSON surface, the SeSAC status codes on
/// `/v1/...` (see ``ErrorMapping``).
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            return try Surface(path: request.uri.path).response(for: error, request: request, context: context)
        }
    }
}
