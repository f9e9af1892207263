package contract

import (
	"bytes"
	"encoding/json"
)

// ErrorBody is the JSON body of every error answer of HTTP API v1
// (docs/api.md): {"error":{"code":"...","message":"...","request_id":"..."}}.
// Every writer of one builds it here (AppendErrorBody).
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error answer's "error" member.
type ErrorDetail struct {
	// Code is the machine-readable error code, such as "invalid_event".
	Code string `json:"code"`
	// Message says what was wrong and how to fix it.
	Message string `json:"message"`
	// RequestID is the request's id (X-Request-Id), to quote in reports.
	RequestID string `json:"request_id"`
}

// AppendErrorBody appends the error body of code, message and requestID
// to dst, with a trailing newline, as encoding/json writes it with HTML
// escaping off.
func AppendErrorBody(dst []byte, code, message, requestID string) []byte {
	b := bytes.NewBuffer(dst)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	// Strings only: Encode cannot fail.
	_ = enc.Encode(ErrorBody{Error: ErrorDetail{Code: code, Message: message, RequestID: requestID}})
	return b.Bytes()
}
