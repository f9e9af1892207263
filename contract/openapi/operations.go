package openapi

import "github.com/triggers-dev/triggers/contract"

// operation is the document's content for one route.
type operation struct {
	// id is the operationId; summary and description say what it does;
	// tag groups it (events, inbox, webhooks, meta).
	id, summary, description, tag string
	// params are its query and header parameters (the path's come from
	// contract.PathParams and components.parameters; X-Correlation-Id is
	// every operation's).
	params []any
	// body names the component schema of its JSON request body ("": none).
	body string
	// responses are its own answers by status. The generator adds the
	// answers every operation can get (400, 429, 500; 401, 403 and 503
	// behind the authorizer; 413 and 415 with a body) unless listed here.
	responses map[int]response
}

// response is one answer of an operation.
type response struct {
	description string
	// schema names the component schema of the JSON body; "" is the
	// error body for a status of 400 or more, no body below.
	schema string
	// headers names component headers it carries besides X-Request-Id
	// and X-Correlation-Id.
	headers []string
}

// operations is the per-route table: one entry per route of
// contract.Routes(), no other (TestOperationsCoverRoutes). A new route is
// a new entry here (and its schemas in componentsOf when it has new
// shapes).
func operations() map[contract.Route]operation {
	// Error answers several operations share.
	notFoundEvent := response{description: "not_found: no such event for this tenant (also: a malformed id, another tenant's event, an expired one)"}
	notFoundSub := response{description: "not_found: no such subscription for this tenant; webhooks_disabled: the deployment has no webhook delivery"}
	const webhooksOff = "webhooks_disabled: the deployment has no webhook delivery"
	return map[contract.Route]operation{
		{Method: contract.MethodPost, Path: contract.PathEvents}: {
			id: "createEvent", tag: "events", summary: "Store one event",
			description: "Stores the event for the caller's tenant: 201 with it and Location. With Idempotency-Key the event is stored at most once per tenant and key: a repeat returns the original with 200; the same key with another event type or payload is a 422.",
			params:      []any{paramRef("Idempotency-Key")},
			body:        "CreateEventRequest",
			responses: map[int]response{
				201: {description: "the stored event", schema: "Event", headers: []string{"Location"}},
				200: {description: "the event stored earlier under this Idempotency-Key", schema: "Event", headers: []string{"Location"}},
				400: {description: "invalid_json, invalid_event, invalid_payload, invalid_idempotency_key, invalid_header, invalid_body or invalid_parameter (a query string: the operation takes no query parameter)"},
				422: {description: "idempotency_key_reused: the Idempotency-Key was used for a different request"},
			},
		},
		{Method: contract.MethodPost, Path: contract.PathEventsBatch}: {
			id: "createEvents", tag: "events", summary: "Store up to 25 events",
			description: "207 with one result per entry, in order: valid entries are stored even when others are not. An entry with status 503 was not stored: resend it. Idempotency-Key is refused (400).",
			body:        "BatchRequest",
			responses: map[int]response{
				207: {description: "one result per entry", schema: "BatchResponse"},
				400: {description: "invalid_json or invalid_batch (the whole body), invalid_idempotency_key (any Idempotency-Key), invalid_header, invalid_body or invalid_parameter (a query string: the operation takes no query parameter)"},
			},
		},
		{Method: contract.MethodGet, Path: contract.PathEvent}: {
			id: "getEvent", tag: "events", summary: "Read one event",
			responses: map[int]response{
				200: {description: "the event", schema: "Event"},
				404: notFoundEvent,
			},
		},
		{Method: contract.MethodPatch, Path: contract.PathEvent}: {
			id: "updateEventStatus", tag: "events", summary: "Change an event's status",
			description: "received -> delivered | failed; failed -> retrying; retrying -> delivered | failed. Moving to retrying increments retry_count. Of two concurrent changes from the same status one wins, the other gets 409.",
			body:        "StatusUpdate",
			responses: map[int]response{
				200: {description: "the updated event", schema: "Event"},
				400: {description: "invalid_json, invalid_status, invalid_idempotency_key (any Idempotency-Key: a change sent again is no deduplicated retry), invalid_header, invalid_body or invalid_parameter (a query string: the operation takes no query parameter)"},
				404: notFoundEvent,
				409: {description: "invalid_transition: the status machine does not allow the change from the current status"},
			},
		},
		{Method: contract.MethodGet, Path: contract.PathInbox}: {
			id: "listInbox", tag: "inbox", summary: "List events, newest first",
			description: "Undelivered (received) events by default. Follow next_cursor until it is null, keeping status, event_type and order; a page may hold fewer than limit events, even none, and still have a next_cursor.",
			params:      []any{paramRef("status"), paramRef("event_type"), paramRef("order"), paramRef("limit"), paramRef("cursor")},
			responses: map[int]response{
				200: {description: "one page", schema: "InboxPage"},
				400: {description: "invalid_parameter (a malformed query string, an unknown, repeated or out-of-range parameter), invalid_cursor, invalid_header, invalid_json (a request body: the operation takes none) or invalid_idempotency_key (any Idempotency-Key)"},
			},
		},
		{Method: contract.MethodPost, Path: contract.PathInboxAck}: {
			id: "ackEvents", tag: "inbox", summary: "Mark received events delivered",
			description: "Idempotent. Ids are reported once each, in one of the four lists.",
			body:        "AckRequest",
			responses: map[int]response{
				200: {description: "what became of each id", schema: "AckResponse"},
				400: {description: "invalid_json, invalid_ack, invalid_idempotency_key (any Idempotency-Key: the ack is idempotent without one), invalid_header, invalid_body or invalid_parameter (a query string: the operation takes no query parameter)"},
			},
		},
		{Method: contract.MethodGet, Path: contract.PathEventAttempts}: {
			id: "listAttempts", tag: "webhooks", summary: "List an event's webhook delivery attempts",
			responses: map[int]response{
				200: {description: "every attempt of the event, to every subscription", schema: "AttemptList"},
				404: {description: "not_found: no such event for this tenant; " + webhooksOff},
			},
		},
		{Method: contract.MethodPost, Path: contract.PathEventRedeliver}: {
			id: "redeliverEvent", tag: "webhooks", summary: "Start a new delivery round of a failed event",
			description: "The round is queued, then the event moves to retrying (retry_count + 1). A 503 either changed nothing (ask again) or queued the round, which moves the event itself unless it changes first: read the event before asking again.",
			responses: map[int]response{
				202: {description: "the event, now retrying", schema: "Event"},
				404: {description: "not_found: no such event for this tenant; " + webhooksOff},
				409: {description: "invalid_transition: the event is not failed, or another redelivery or retry moved it meanwhile"},
			},
		},
		{Method: contract.MethodGet, Path: contract.PathSubscriptions}: {
			id: "listSubscriptions", tag: "webhooks", summary: "List the tenant's webhook subscriptions",
			description: "Secrets are never included.",
			responses: map[int]response{
				200: {description: "every subscription of the tenant", schema: "SubscriptionList"},
				404: {description: webhooksOff},
			},
		},
		{Method: contract.MethodPost, Path: contract.PathSubscriptions}: {
			id: "createSubscription", tag: "webhooks", summary: "Subscribe an HTTPS endpoint",
			description: "201 with the subscription and its signing secret, shown this once. The url's host must resolve only to public addresses. At most 20 subscriptions per tenant. Idempotency-Key is refused (400): a create sent again makes another subscription.",
			body:        "CreateSubscriptionRequest",
			responses: map[int]response{
				201: {description: "the subscription with its signing secret", schema: "SubscriptionCreated"},
				400: {description: "invalid_json, invalid_subscription (also: the tenant holds 20 already), invalid_target, invalid_idempotency_key (any Idempotency-Key), invalid_header, invalid_body or invalid_parameter (a query string: the operation takes no query parameter)"},
				404: {description: webhooksOff},
			},
		},
		{Method: contract.MethodGet, Path: contract.PathSubscription}: {
			id: "getSubscription", tag: "webhooks", summary: "Read one subscription",
			description: "Its secret is never included.",
			responses: map[int]response{
				200: {description: "the subscription", schema: "Subscription"},
				404: notFoundSub,
			},
		},
		{Method: contract.MethodPatch, Path: contract.PathSubscription}: {
			id: "updateSubscription", tag: "webhooks", summary: "Change a subscription, or re-enable it",
			description: "A partial update of url, event_types, description and disabled, with create's rules and target check, in one conditional write. A url on another server (scheme, host, port) is a new endpoint: its breaker starts closed; another path or query string keeps it. disabled false re-enables a disabled subscription: its next delivery is a single probe.",
			body:        "PatchSubscriptionRequest",
			responses: map[int]response{
				200: {description: "the subscription as changed", schema: "Subscription"},
				400: {description: "invalid_json, invalid_subscription (an empty patch, an unknown field, a wrong type), invalid_target, invalid_idempotency_key (any Idempotency-Key), invalid_header, invalid_body or invalid_parameter (a query string: the operation takes no query parameter)"},
				404: notFoundSub,
			},
		},
		{Method: contract.MethodGet, Path: contract.PathSubscriptionAttempts}: {
			id: "listSubscriptionAttempts", tag: "webhooks", summary: "List a subscription's delivery attempts, newest event first",
			description: "Within an event, the latest attempt first. Follow next_cursor until it is null, keeping status; with status, a page may hold fewer than limit attempts and still have a next_cursor.",
			params:      []any{paramRef("attemptStatus"), paramRef("attemptLimit"), paramRef("attemptCursor")},
			responses: map[int]response{
				200: {description: "one page", schema: "SubscriptionAttemptsPage"},
				400: {description: "invalid_parameter (a malformed query string, an unknown, repeated or out-of-range parameter), invalid_cursor, invalid_header, invalid_json (a request body: the operation takes none) or invalid_idempotency_key (any Idempotency-Key)"},
				404: notFoundSub,
			},
		},
		{Method: contract.MethodPost, Path: contract.PathSubscriptionRecover}: {
			id: "recoverSubscription", tag: "webhooks", summary: "Deliver again the failed events of a time range to one subscription",
			description: "Every event of [since, until) whose latest attempt to this subscription failed with no retry to come is delivered again to it alone, once, as its next attempt; the work runs asynchronously, a page at a time. until defaults to now.",
			params:      []any{paramRef("recoverIdempotencyKey")},
			body:        "RecoverRequest",
			responses: map[int]response{
				202: {description: "the recovery, queued", schema: "RecoveryQueued"},
				400: {description: "invalid_json, invalid_recover (since or until missing, malformed, out of order, older than the retention or in the future), invalid_idempotency_key, invalid_header, invalid_body or invalid_parameter (a query string: the operation takes no query parameter)"},
				404: notFoundSub,
				409: {description: "subscription_disabled: re-enable it first (PATCH disabled false)"},
			},
		},
		{Method: contract.MethodDelete, Path: contract.PathSubscription}: {
			id: "deleteSubscription", tag: "webhooks", summary: "Delete a subscription",
			responses: map[int]response{
				200: {description: "deleted", schema: "SubscriptionDeleted"},
				404: notFoundSub,
			},
		},
		{Method: contract.MethodPost, Path: contract.PathSubscriptionRotate}: {
			id: "rotateSubscriptionSecret", tag: "webhooks", summary: "Rotate a subscription's signing secret",
			description: "The new secret is shown this once; the previous one keeps signing (alongside) until previous_secret_expires_at. A rotation sent again rotates again: an Idempotency-Key is refused (400).",
			responses: map[int]response{
				200: {description: "the new secret", schema: "SecretRotated"},
				404: notFoundSub,
				409: {description: "conflict: another rotation of the same subscription won the race"},
			},
		},
		{Method: contract.MethodGet, Path: contract.PathOpenAPI}: {
			id: "getOpenAPIDocument", tag: "meta", summary: "This document",
			description: "The OpenAPI document of this API, without an API key (other methods on this path need one, like every path's).",
			responses: map[int]response{
				200: {description: "the OpenAPI 3.1 document", schema: "OpenAPIDocument"},
			},
		},
	}
}

func paramRef(name string) any { return map[string]string{"$ref": "#/components/parameters/" + name} }
