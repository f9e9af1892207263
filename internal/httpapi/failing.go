package httpapi

import (
	"net/http"
	"strconv"

	"github.com/triggers-dev/triggers/contract"
)

// Failing returns a handler that answers every request with one error, in
// the API's shape and with the headers every answer of the API carries:
// X-Request-Id, X-Correlation-Id echoed when it is valid, the CORS headers
// of cors (nil: none) and, on a 503, Retry-After. A composition root that
// could not build the API (lambda/api, whose cursor secret could not be
// read) answers with it, so that a page on an allowed origin can read the
// 503 and a client finds its correlation id, as docs/api.md promises of
// every answer.
func Failing(cors *contract.CORS, status int, code, message string) http.Handler {
	var policy *corsPolicy
	if cors != nil {
		policy = newCORSPolicy(*cors)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requestID := ctxString(r.Context(), requestIDKey)
		if requestID == "" {
			requestID = newRequestID()
		}
		w.Header().Set("X-Request-Id", requestID)
		policy.apply(w.Header(), r.Header.Get("Origin"))
		if c := r.Header.Get("X-Correlation-Id"); c != "" && validHeaderToken(c, 128) {
			w.Header().Set("X-Correlation-Id", c)
		}
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		}
		writeJSON(w, status, contract.ErrorBody{Error: contract.ErrorDetail{Code: code, Message: message, RequestID: requestID}}, requestID)
	})
}
