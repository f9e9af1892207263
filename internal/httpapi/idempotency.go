package httpapi

import (
	"fmt"
	"net/http"

	"github.com/triggers-dev/triggers/contract"
)

// idempotencyRoutes are the routes that honour an Idempotency-Key
// (idempotencyKey checks its value there), by contract.Route.String:
// POST /v1/events stores an event at most once per key, and a recovery
// names itself after its key. Every other route refuses one
// (checkNoIdempotencyKey), so a new route refuses it until it is named
// here.
var idempotencyRoutes = map[string]bool{
	contract.Route{Method: contract.MethodPost, Path: contract.PathEvents}.String():              true,
	contract.Route{Method: contract.MethodPost, Path: contract.PathSubscriptionRecover}.String(): true,
}

// batchRoute is POST /v1/events/batch, whose refusal of an Idempotency-Key
// counts in EventsRejected as the batch's other refusals do.
var batchRoute = contract.Route{Method: contract.MethodPost, Path: contract.PathEventsBatch}.String()

// eventsRoute is POST /v1/events, by contract.Route.String.
var eventsRoute = contract.Route{Method: contract.MethodPost, Path: contract.PathEvents}.String()

// ingestRoutes are the ingestion routes, POST /v1/events and the batch, by
// contract.Route.String: every answer to an authenticated request of
// theirs counts in EventsIngested or EventsRejected (serve).
var ingestRoutes = map[string]bool{eventsRoute: true, batchRoute: true}

// noIdempotencyMessages are the refusals of the two routes that refused a
// key before every route did, as they were worded.
var noIdempotencyMessages = map[string]string{
	batchRoute: "Idempotency-Key is not supported on batch requests; send events one by one to deduplicate them",
	contract.Route{Method: contract.MethodPost, Path: contract.PathSubscriptions}.String(): "Idempotency-Key is not supported on subscription creation: a create sent again makes another subscription; after a timeout, list the subscriptions (GET /v1/subscriptions) before creating again",
}

// noIdempotencyReasons say, by route, what a request sent again does
// there instead of being deduplicated; a route without an entry (a read)
// gets none.
var noIdempotencyReasons = map[string]string{
	contract.Route{Method: contract.MethodPost, Path: contract.PathSubscriptionRotate}.String(): "a rotation sent again rotates the secret again (deploy the secret of the last answer you got)",
	contract.Route{Method: contract.MethodPost, Path: contract.PathEventRedeliver}.String():     "a redelivery sent again is refused with 409 once the event is retrying: read the event before asking again",
	contract.Route{Method: contract.MethodPatch, Path: contract.PathEvent}.String():             "a status change sent again is refused with 409 once made: read the event before sending it again",
	contract.Route{Method: contract.MethodPost, Path: contract.PathInboxAck}.String():           "an ack is idempotent without a key: send the same ack again",
	contract.Route{Method: contract.MethodPatch, Path: contract.PathSubscription}.String():      "a patch sent again sets the same fields again",
	contract.Route{Method: contract.MethodDelete, Path: contract.PathSubscription}.String():     "a delete sent again answers 404 once the subscription is gone",
}

// checkNoIdempotencyKey refuses an Idempotency-Key on a route outside
// idempotencyRoutes, whatever its value (empty or repeated included): a
// 400 invalid_idempotency_key naming the route, before the route reads or
// writes anything. Ignoring it let a client believe its retry was
// deduplicated: a rotate retried with its key rotated twice (found by
// review).
func checkNoIdempotencyKey(r *http.Request) error {
	if len(r.Header.Values("Idempotency-Key")) == 0 {
		return nil
	}
	route := contract.RouteOf(r.Method, r.URL.Path)
	if idempotencyRoutes[route] {
		return nil
	}
	msg, ok := noIdempotencyMessages[route]
	if !ok {
		msg = fmt.Sprintf("Idempotency-Key is not supported on %s (only POST /v1/events and POST /v1/subscriptions/{subscription_id}/recover deduplicate by it): ", route)
		if why := noIdempotencyReasons[route]; why != "" {
			msg += why + "; "
		}
		msg += "send the request without it"
	}
	return &apiError{status: http.StatusBadRequest, code: "invalid_idempotency_key", message: msg}
}
