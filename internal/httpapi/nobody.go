package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
)

// bodyRoutes are the routes that read a request body (readBody), by
// contract.Route.String. Every other route takes none (checkNoBody), so a
// new route refuses one until it is named here.
var bodyRoutes = map[string]bool{
	contract.Route{Method: contract.MethodPost, Path: contract.PathEvents}.String():              true,
	contract.Route{Method: contract.MethodPost, Path: contract.PathEventsBatch}.String():         true,
	contract.Route{Method: contract.MethodPatch, Path: contract.PathEvent}.String():              true,
	contract.Route{Method: contract.MethodPost, Path: contract.PathInboxAck}.String():            true,
	contract.Route{Method: contract.MethodPost, Path: contract.PathSubscriptions}.String():       true,
	contract.Route{Method: contract.MethodPatch, Path: contract.PathSubscription}.String():       true,
	contract.Route{Method: contract.MethodPost, Path: contract.PathSubscriptionRecover}.String(): true,
}

// checkNoBody refuses a request body on a route outside bodyRoutes: a
// body holding anything but JSON whitespace (space, tab, line feed,
// carriage return), an empty object or null, or more than
// event.MaxBodyBytes, is a 400 invalid_json naming the route, before the
// route reads or writes anything. Ignoring it let "POST /v1/events/{id}/redeliver" with
// {"subscription_id": ...} redeliver to every subscription, and a rotate
// with {"overlap": "0s"} keep the default overlap, each with a 2xx: the
// client believed the body had taken effect (found by review). No body
// (Content-Length 0, or none) passes, and so does one of only whitespace,
// "{}" or "null" (whitespace around and inside allowed): they carry
// nothing a client could believe was read, and many HTTP clients send
// "{}" with every POST. The body's Content-Type is not looked at.
func checkNoBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	route := contract.RouteOf(r.Method, r.URL.Path)
	if bodyRoutes[route] {
		return nil
	}
	refuse := func(why string) error {
		return &event.InputError{Code: event.CodeInvalidJSON, Message: fmt.Sprintf("%s takes no request body: send none (%s; a body of only whitespace, {} or null counts as none)", route, why)}
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, event.MaxBodyBytes+1))
	if err != nil {
		return &apiError{status: http.StatusBadRequest, code: "invalid_body", message: "the body could not be read", cause: err}
	}
	if len(data) > event.MaxBodyBytes {
		return refuse("this one is over 256 KiB")
	}
	const ws = " \t\n\r"
	rest := bytes.Trim(data, ws)
	empty := len(rest) == 0 || string(rest) == "null" ||
		len(rest) >= 2 && rest[0] == '{' && rest[len(rest)-1] == '}' && len(bytes.Trim(rest[1:len(rest)-1], ws)) == 0
	if empty {
		return nil
	}
	i := bytes.IndexFunc(data, func(c rune) bool { return !strings.ContainsRune(ws, c) })
	return refuse(fmt.Sprintf("this one holds %q at byte %d", string(data[i:i+1]), i))
}
