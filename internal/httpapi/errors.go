package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/cursor"
	"github.com/triggers-dev/triggers/internal/event"
)

// RetryAfterSeconds is the Retry-After of 503 responses.
const RetryAfterSeconds = 1

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// apiError is an error with its HTTP rendering.
type apiError struct {
	status     int
	code       string
	message    string
	retryAfter string
	allow      string
	cause      error
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return e.code + ": " + e.message + ": " + e.cause.Error()
	}
	return e.code + ": " + e.message
}

func (e *apiError) Unwrap() error { return e.cause }

type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// unauthorized is the 401 of an API whose key sources are s: its message
// states exactly the rules of s (the construct's UNAUTHORIZED gateway
// response says the same).
func unauthorized(s apikey.Sources, cause error) *apiError {
	return &apiError{status: http.StatusUnauthorized, code: "unauthorized", message: s.Hint(), cause: cause}
}

// toAPIError maps any error to its response.
func toAPIError(err error) *apiError {
	var ae *apiError
	var in *event.InputError
	var te *event.TransitionError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &in):
		return &apiError{status: http.StatusBadRequest, code: in.Code, message: in.Message}
	case errors.As(err, &te):
		return &apiError{status: http.StatusConflict, code: "invalid_transition", message: te.Error() + " (allowed: received->delivered|failed, failed->retrying, retrying->delivered|failed)"}
	case errors.Is(err, event.ErrNotFound):
		return &apiError{status: http.StatusNotFound, code: "not_found", message: "no such event"}
	case errors.Is(err, event.ErrSubscriptionNotFound):
		return &apiError{status: http.StatusNotFound, code: "not_found", message: "no such subscription"}
	case errors.Is(err, event.ErrRotationConflict):
		return &apiError{status: http.StatusConflict, code: "conflict", message: "the secret was rotated concurrently by another request; list the subscription and rotate again if needed"}
	case errors.Is(err, event.ErrIdempotencyMismatch):
		return &apiError{status: http.StatusUnprocessableEntity, code: "idempotency_key_reused", message: "this Idempotency-Key was used for a different request; use a new key"}
	case errors.Is(err, event.ErrInvalidItem):
		return &apiError{status: http.StatusBadRequest, code: event.CodeInvalidPayload, message: "DynamoDB cannot store this event (too large, nested too deeply, or holding a value it cannot represent); see the JSON rules in the API documentation"}
	case errors.Is(err, event.ErrUnavailable):
		return &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "storage is busy; retry after the Retry-After delay", retryAfter: strconv.Itoa(RetryAfterSeconds)}
	case errors.Is(err, cursor.ErrInvalid):
		return &apiError{status: http.StatusBadRequest, code: "invalid_cursor", message: "cursor is invalid, was altered, or belongs to another query or tenant; start again without it"}
	case errors.Is(err, apikey.ErrRevoked):
		return &apiError{status: http.StatusForbidden, code: "forbidden", message: "this API key was revoked"}
	}
	return &apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error; quote the request id when reporting it"}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		// Only a programming error gets here: nothing the client sends
		// produces an unencodable body.
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"cannot encode the response"}}` + "\n")
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
