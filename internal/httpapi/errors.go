package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/cursor"
	"github.com/triggers-dev/triggers/internal/event"
)

// RetryAfterSeconds is the Retry-After of 503 responses.
const RetryAfterSeconds = 1

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
func unauthorized(s contract.KeySources, cause error) *apiError {
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
	case errors.Is(err, event.ErrRoundSuperseded):
		return &apiError{status: http.StatusConflict, code: "invalid_transition", message: "the event was redelivered or retried concurrently by another request; read it again"}
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
	}
	return &apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error; quote the request id when reporting it"}
}

// jsonAppender is a response body that writes its own JSON, the bytes
// encoding/json with HTML escaping off would write for it: the event and
// inbox responses, whose payloads stay in stored form.
type jsonAppender interface {
	AppendJSON(dst []byte) ([]byte, error)
}

var (
	_ jsonAppender = event.Event{}
	_ jsonAppender = InboxPage{}
)

// bodies recycles response buffers.
var bodies = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// writeJSON writes body as JSON (encoding/json, HTML escaping off, and a
// newline) with status; requestID names the request in the error body of
// a body that cannot be encoded.
func writeJSON(w http.ResponseWriter, status int, body any, requestID string) {
	bp := bodies.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 1<<20 {
			bodies.Put(bp)
		}
	}()
	buf := (*bp)[:0]
	var err error
	if a, ok := body.(jsonAppender); ok {
		buf, err = a.AppendJSON(buf)
		buf = append(buf, '\n')
	} else {
		b := bytes.NewBuffer(buf)
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		err = enc.Encode(body)
		buf = b.Bytes()
	}
	if err != nil {
		// Only a programming error gets here: nothing the client sends
		// produces an unencodable body.
		buf = contract.AppendErrorBody(buf[:0], "internal", "cannot encode the response; quote the request id when reporting it", requestID)
		status = http.StatusInternalServerError
	}
	*bp = buf
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(status)
	_, _ = w.Write(buf)
}
