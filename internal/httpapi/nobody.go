package httpapi

import (
	"fmt"
	"io"
	"net/http"

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
// carriage return), or more than event.MaxBodyBytes of it, is a 400
// invalid_json naming the route, before the route reads or writes
// anything. Ignoring it let "POST /v1/events/{id}/redeliver" with
// {"subscription_id": ...} redeliver to every subscription, and a rotate
// with {"overlap": "0s"} keep the default overlap, each with a 2xx: the
// client believed the body had taken effect (found by review). No body
// (Content-Length 0, or none) passes, and so does one of only whitespace,
// which carries nothing a client could believe was read. The body's
// Content-Type is not looked at.
func checkNoBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	route := contract.RouteOf(r.Method, r.URL.Path)
	if bodyRoutes[route] {
		return nil
	}
	refuse := func(why string) error {
		return &event.InputError{Code: event.CodeInvalidJSON, Message: fmt.Sprintf("%s takes no request body: send none (%s; a body of only whitespace counts as none)", route, why)}
	}
	var buf [4096]byte
	body := io.LimitReader(r.Body, event.MaxBodyBytes+1)
	read := 0
	for {
		n, err := body.Read(buf[:])
		for i, c := range buf[:n] {
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				return refuse(fmt.Sprintf("this one holds %q at byte %d", string([]byte{c}), read+i))
			}
		}
		read += n
		if read > event.MaxBodyBytes {
			return refuse("this one is over 256 KiB")
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return &apiError{status: http.StatusBadRequest, code: "invalid_body", message: "the body could not be read", cause: err}
		}
	}
}
