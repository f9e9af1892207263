package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
)

// queryRoutes are the routes that read a query string, each with its own
// rules (the inbox: event.ParseRawListQuery; a subscription's attempts:
// parseAttemptsQuery), by contract.Route.String. Every other route takes
// no query parameter (checkNoQuery), so a new route refuses them until it
// is named here.
var queryRoutes = map[string]bool{
	contract.Route{Method: contract.MethodGet, Path: contract.PathInbox}.String():                true,
	contract.Route{Method: contract.MethodGet, Path: contract.PathSubscriptionAttempts}.String(): true,
}

// checkNoQuery refuses a query string on a route of queryRoutes' complement:
// a malformed one, or any parameter, is a 400 invalid_parameter naming the
// first parameter as sent, before the route reads or writes anything.
// Ignoring it let "GET /v1/subscriptions?limit=1" answer every
// subscription, and a client believe it had limited the list (found by
// review). An empty query ("?", "&") has no parameter and passes.
func checkNoQuery(r *http.Request) error {
	raw := r.URL.RawQuery
	if raw == "" {
		return nil
	}
	route := contract.RouteOf(r.Method, r.URL.Path)
	if queryRoutes[route] {
		return nil
	}
	if _, err := url.ParseQuery(raw); err != nil {
		return &event.InputError{Code: event.CodeInvalidParameter, Message: fmt.Sprintf("the query string is malformed: %s; %s takes no query parameter", messagePart(err.Error()), route)}
	}
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, _, _ := strings.Cut(part, "=")
		// url.ParseQuery unescaped every name already.
		name, _ := url.QueryUnescape(k)
		return &event.InputError{Code: event.CodeInvalidParameter, Message: fmt.Sprintf("parameter %q is unknown: %s takes no query parameter", messagePart(name), route)}
	}
	return nil
}

// messagePart shortens client text quoted in a message to truncatePath's
// 100 bytes, dropping a character the cut split.
func messagePart(s string) string { return strings.ToValidUTF8(truncatePath(s), "") }
