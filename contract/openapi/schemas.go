package openapi

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/triggers-dev/triggers/contract"
)

// schema is a JSON Schema 2020-12 schema (or an OpenAPI object written
// the same way).
type schema = map[string]any

// object is a closed object schema: props, of which required must be
// present, and no other member.
func object(description string, required []string, props map[string]any) schema {
	s := schema{"type": "object", "properties": props, "additionalProperties": false}
	if description != "" {
		s["description"] = description
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func arrayOf(items schema) schema { return schema{"type": "array", "items": items} }

// with returns a copy of props with name set to v.
func with(props map[string]any, name string, v any) map[string]any {
	out := make(map[string]any, len(props)+1)
	for k, p := range props {
		out[k] = p
	}
	out[name] = v
	return out
}

func describe(s schema, description string) schema {
	out := schema{"description": description}
	for k, v := range s {
		out[k] = v
	}
	return out
}

// visibleASCII is a header value of 1-n visible ASCII characters.
func visibleASCII(n int) schema {
	return schema{"type": "string", "minLength": 1, "maxLength": n, "pattern": "^[!-~]+$"}
}

// Patterns of the values the API writes.
const (
	// eventIDPattern: a lowercase UUIDv7 (RFC 9562 variant).
	eventIDPattern = "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
	// timestampPattern: RFC 3339, UTC, exactly six fractional digits.
	timestampPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$`
	// subscriptionIDPattern: "sub_" and 26 characters of lowercase base32.
	subscriptionIDPattern = "^sub_[a-z2-7]{26}$"
	// secretPattern: "whsec_" and the standard base64 of 24-64 bytes.
	secretPattern = "^whsec_[A-Za-z0-9+/]{32,88}={0,2}$"
)

// descriptionRule is a subscription description's rule in a create or a
// patch (contract.DescriptionRefusal), and descriptionPattern its regular
// expression. Responses have no pattern: a description stored before the
// rule may hold one of these characters.
const descriptionRule = "one line of visible text: no control character (U+0000-U+001F, U+007F-U+009F), " +
	"bidirectional control (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), " +
	"line or paragraph separator (U+2028, U+2029) or other invisible format character " +
	"(Unicode category Cf: U+200B, U+2060, U+FEFF, the tag characters...); " +
	"the zero-width non-joiner U+200C and joiner U+200D, the Mongolian vowel separator U+180E " +
	"and the prepended concatenation marks (U+0600-U+0605...) are allowed"

// descriptionPattern returns the characters contract.DescriptionRefusal
// refuses as a negated class: those below U+0100 as \xHH, which
// ECMA-262 and RE2 both read, the others as themselves (Generate writes
// them \uXXXX in the JSON, which keeps the document ASCII). The class
// holds characters outside the Basic Multilingual Plane (the tag
// characters), so an ECMA-262 engine must read it with the u flag, as
// JSON Schema 2020-12's ask.
func descriptionPattern() string {
	var b strings.Builder
	b.WriteString("^[^")
	refused := func(r rune) bool { return contract.DescriptionRefusal(r) != "" }
	for lo := rune(0); lo <= unicode.MaxRune; lo++ {
		if !refused(lo) {
			continue
		}
		hi := lo
		for hi < unicode.MaxRune && refused(hi+1) {
			hi++
		}
		b.WriteString(patternRune(lo))
		if hi > lo+1 {
			b.WriteByte('-')
		}
		if hi > lo {
			b.WriteString(patternRune(hi))
		}
		lo = hi
	}
	b.WriteString("]*$")
	return b.String()
}

// patternRune writes r for a character class: \xHH below U+0100 (the
// ASCII punctuation a class treats specially among them), else r itself.
func patternRune(r rune) string {
	if r < 0x100 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return string(r)
}

// subscriptionProps are the members of a subscription as the API shows it
// (never a secret).
func subscriptionProps() map[string]any {
	return map[string]any{
		"subscription_id": schemaRef("SubscriptionID"),
		"url":             schema{"type": "string", "format": "uri", "maxLength": 2048, "pattern": "^https://"},
		"event_types":     describe(arrayOf(schemaRef("EventType")), "the event types delivered; empty: every type"),
		"description":     schema{"type": "string", "maxLength": 256},
		"created_at":      schemaRef("Timestamp"),
		"disabled":        describe(schema{"type": "boolean"}, "set when the endpoint failed for longer than the deployment's disable-after period: nothing is sent to it"),
		"disabled_reason": schema{"type": "string"},
		"failing_since":   describe(schemaRef("Timestamp"), "when the current run of failures began: its first failed attempt's timestamp, to the microsecond (whole seconds for a run that began under 0.1.0 or before); absent while the endpoint succeeds"),
	}
}

// componentsOf returns the document's components.
func componentsOf() components {
	errorContent := map[string]mediaType{jsonMedia: {Schema: schemaRef("Error")}}
	errResp := func(description string, extra ...string) responseJ {
		h := map[string]any{"X-Request-Id": headerRef("X-Request-Id"), "X-Correlation-Id": headerRef("X-Correlation-Id")}
		for _, e := range extra {
			h[e] = headerRef(e)
		}
		return responseJ{Description: description, Headers: h, Content: errorContent}
	}
	subscriptionRequired := []string{"subscription_id", "url", "event_types", "created_at", "disabled"}
	attemptRequired := []string{"subscription_id", "attempt", "timestamp", "outcome", "latency_ms"}
	attemptProps := map[string]any{
		"subscription_id": schemaRef("SubscriptionID"),
		"attempt":         describe(schema{"type": "integer", "minimum": 1}, "counts the attempts of this event to this subscription"),
		"timestamp":       schemaRef("Timestamp"),
		"outcome": describe(schema{"type": "string", "enum": []string{"scheduled", "pending", "delivered", "failed", "gone"}},
			"delivered (2xx), failed, gone (410), pending (being made now) or scheduled (put off: the endpoint's circuit is open or its rate cap used up)"),
		"status_code": describe(schema{"type": "integer", "minimum": 1, "maximum": 999},
			"the receiver's status as it answered: any three digits, so also outside the HTTP statuses 100-599 (absent when nothing answered)"),
		"latency_ms":      schema{"type": "integer", "minimum": 0},
		"response":        describe(schema{"type": "string", "maxLength": 1000}, "the first 1000 characters of the response body"),
		"error":           schema{"type": "string"},
		"next_attempt_at": describe(schemaRef("Timestamp"), "when the next attempt is due, at the earliest"),
	}
	created := subscriptionProps()
	created["secret"] = describe(schemaRef("WebhookSecret"), "the signing secret, shown this once")
	return components{
		Schemas: map[string]schema{
			"EventID":        describe(schema{"type": "string", "pattern": eventIDPattern}, "a UUIDv7 that encodes the event's timestamp"),
			"EventType":      schema{"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]*$"},
			"EventStatus":    schema{"type": "string", "enum": []string{"received", "delivered", "failed", "retrying"}},
			"Timestamp":      describe(schema{"type": "string", "format": "date-time", "pattern": timestampPattern}, "RFC 3339, UTC, exactly six fractional digits"),
			"SubscriptionID": schema{"type": "string", "pattern": subscriptionIDPattern},
			"WebhookSecret":  describe(schema{"type": "string", "pattern": secretPattern}, "a Standard Webhooks signing secret"),
			"Payload": describe(schema{"type": "object"},
				"any JSON object, nested at most 31 levels, without empty keys; numbers of at most 38 significant digits and a magnitude from 1E-130 to below 1E+126 (DynamoDB's Number); returned with every digit"),
			"Event": object("one stored event", []string{"event_id", "event_type", "payload", "status", "timestamp", "retry_count", "metadata"}, map[string]any{
				"event_id":    schemaRef("EventID"),
				"event_type":  schemaRef("EventType"),
				"payload":     schemaRef("Payload"),
				"status":      schemaRef("EventStatus"),
				"timestamp":   schemaRef("Timestamp"),
				"retry_count": describe(schema{"type": "integer", "minimum": 0}, "how many times the event moved to retrying"),
				"metadata": object("what the API recorded about the request that created the event", []string{"source_ip", "api_version"}, map[string]any{
					"source_ip":      schema{"type": "string"},
					"api_version":    schema{"const": "v1"},
					"correlation_id": describe(visibleASCII(128), "the request's X-Correlation-Id, when it had one"),
				}),
			}),
			"CreateEventRequest": object("", []string{"event_type", "payload"}, map[string]any{
				"event_type": schemaRef("EventType"),
				"payload":    schemaRef("Payload"),
			}),
			"BatchRequest": object("", []string{"events"}, map[string]any{
				"events": schema{"type": "array", "minItems": 1, "maxItems": 25, "items": schemaRef("CreateEventRequest")},
			}),
			"BatchResult": func() schema {
				s := object("the outcome of one entry: the stored event (status 201) or its error", []string{"index", "status"}, map[string]any{
					"index":  describe(schema{"type": "integer", "minimum": 0, "maximum": 24}, "the entry's position in the request"),
					"status": describe(schema{"type": "integer", "minimum": 200, "maximum": 599}, "the entry's HTTP status: 201, or its error's (a 503 entry was not stored: resend it)"),
					"event":  schemaRef("Event"),
					"error":  schemaRef("ErrorDetail"),
				})
				s["oneOf"] = []schema{
					{"required": []string{"event"}, "not": schema{"required": []string{"error"}}, "properties": schema{"status": schema{"const": 201}}},
					{"required": []string{"error"}, "not": schema{"required": []string{"event"}}, "properties": schema{"status": schema{"minimum": 400}}},
				}
				return s
			}(),
			"BatchResponse": object("", []string{"results"}, map[string]any{
				"results": schema{"type": "array", "minItems": 1, "maxItems": 25, "items": schemaRef("BatchResult")},
			}),
			"InboxPage": object("", []string{"events", "next_cursor"}, map[string]any{
				"events":      schema{"type": "array", "maxItems": 100, "items": schemaRef("Event")},
				"next_cursor": describe(schema{"type": []string{"string", "null"}, "minLength": 1}, "pass it as cursor for the next page; null on the last"),
			}),
			"StatusUpdate": object("", []string{"status"}, map[string]any{"status": schemaRef("EventStatus")}),
			"AckRequest": object("", []string{"event_ids"}, map[string]any{
				"event_ids": schema{"type": "array", "minItems": 1, "maxItems": 100, "items": schema{"type": "string"}},
			}),
			"AckResponse": object("each requested id, once, in one list", []string{"delivered", "already_delivered", "unknown", "conflicts"}, map[string]any{
				"delivered":         describe(arrayOf(schema{"type": "string"}), "received events now delivered"),
				"already_delivered": arrayOf(schema{"type": "string"}),
				"unknown":           describe(arrayOf(schema{"type": "string"}), "no such event for this tenant (or expired)"),
				"conflicts": describe(arrayOf(object("", []string{"event_id", "status"}, map[string]any{
					"event_id": schema{"type": "string"},
					"status":   schemaRef("EventStatus"),
				})), "events in failed or retrying, with their status: use PATCH for those"),
			}),
			"CreateSubscriptionRequest": object("", []string{"url"}, map[string]any{
				"url":         describe(schema{"type": "string", "maxLength": 2048}, "an absolute https URL whose host resolves only to public addresses; port 443 or 1024-65535; no user information or fragment; percent-encoded (no space, no character outside ASCII)"),
				"event_types": describe(schema{"type": "array", "maxItems": 50, "items": schemaRef("EventType")}, "omitted or empty: every type"),
				"description": describe(schema{"type": "string", "maxLength": 256, "pattern": descriptionPattern()}, descriptionRule),
			}),
			"Subscription":        object("a webhook subscription (secrets are never shown but at creation and rotation)", subscriptionRequired, subscriptionProps()),
			"SubscriptionCreated": object("a new subscription and its signing secret", append(slices.Clone(subscriptionRequired), "secret"), created),
			"SubscriptionList": object("", []string{"subscriptions"}, map[string]any{
				"subscriptions": schema{"type": "array", "maxItems": 20, "items": schemaRef("Subscription")},
			}),
			"SubscriptionDeleted": object("", []string{"subscription_id", "deleted"}, map[string]any{
				"subscription_id": schemaRef("SubscriptionID"),
				"deleted":         schema{"const": true},
			}),
			"SecretRotated": object("", []string{"subscription_id", "secret", "previous_secret_expires_at"}, map[string]any{
				"subscription_id":            schemaRef("SubscriptionID"),
				"secret":                     describe(schemaRef("WebhookSecret"), "the new signing secret, shown this once"),
				"previous_secret_expires_at": describe(schemaRef("Timestamp"), "until then the previous secret signs too"),
			}),
			"Attempt": object("one webhook delivery attempt", attemptRequired, attemptProps),
			"SubscriptionAttempt": object("one webhook delivery attempt, with its event", append(slices.Clone(attemptRequired), "event_id"),
				with(attemptProps, "event_id", schemaRef("EventID"))),
			"SubscriptionAttemptsPage": object("", []string{"subscription_id", "attempts", "next_cursor"}, map[string]any{
				"subscription_id": schemaRef("SubscriptionID"),
				"attempts":        schema{"type": "array", "maxItems": 100, "items": schemaRef("SubscriptionAttempt")},
				"next_cursor":     describe(schema{"type": []string{"string", "null"}}, "the next page's cursor, null on the last page"),
			}),
			"RecoverRequest": object("", []string{"since"}, map[string]any{
				"since": describe(schema{"type": "string", "format": "date-time"}, "the range's start (RFC 3339 with a time zone), within the event retention"),
				"until": describe(schema{"type": "string", "format": "date-time"}, "the range's end, exclusive; default now"),
			}),
			"RecoveryQueued": object("", []string{"queued", "recovery_id", "subscription_id", "since", "until"}, map[string]any{
				"queued":          schema{"const": true},
				"recovery_id":     describe(schema{"type": "string", "pattern": "^[0-9a-f]{32}$"}, "names the recovery's attempts (their round)"),
				"subscription_id": schemaRef("SubscriptionID"),
				"since":           schemaRef("Timestamp"),
				"until":           schemaRef("Timestamp"),
			}),
			"PatchSubscriptionRequest": schema{
				"type": "object", "additionalProperties": false, "minProperties": 1,
				"description": "the fields to change, at least one",
				"properties": map[string]any{
					"url":         describe(schema{"type": "string", "maxLength": 2048}, "on another server (scheme, host, port), a new endpoint (as at creation): its breaker starts closed; another path or query string on the same server keeps it"),
					"event_types": describe(schema{"type": "array", "maxItems": 50, "items": schemaRef("EventType")}, "empty: every type"),
					"description": describe(schema{"type": "string", "maxLength": 256, "pattern": descriptionPattern()}, descriptionRule+"; empty clears it"),
					"disabled":    describe(schema{"type": "boolean"}, "false re-enables a disabled subscription, whose next delivery is a single probe; true disables it"),
				},
			},
			"AttemptList": object("", []string{"event_id", "attempts"}, map[string]any{
				"event_id":  schemaRef("EventID"),
				"attempts":  arrayOf(schemaRef("Attempt")),
				"truncated": describe(schema{"const": true}, "present when the answer would pass Lambda's 6 MB response limit: the lowest-numbered attempts are left out (never a subscription's latest); each subscription's GET /v1/subscriptions/{subscription_id}/attempts pages through all of them"),
			}),
			"ErrorDetail": object("", []string{"code", "message", "request_id"}, map[string]any{
				"code":       describe(schema{"type": "string", "pattern": "^[a-z][a-z0-9_]*$"}, "machine-readable, such as invalid_event (docs/api.md lists them)"),
				"message":    describe(schema{"type": "string", "minLength": 1}, "what was wrong and how to fix it"),
				"request_id": describe(schema{"type": "string", "minLength": 1}, "the response's X-Request-Id"),
			}),
			"Error": object("every error answer, API Gateway's own included", []string{"error"}, map[string]any{
				"error": schemaRef("ErrorDetail"),
			}),
			"OpenAPIDocument": schema{
				"description": "an OpenAPI 3.1 document",
				"type":        "object", "required": []string{"openapi", "info", "paths"},
				"properties": map[string]any{"openapi": schema{"const": Version}},
			},
		},
		Responses: map[string]responseJ{
			"BadRequest":           errResp("invalid_header: a malformed X-Correlation-Id; invalid_parameter: a query string on an operation that takes no query parameter, or API Gateway found a required parameter missing; invalid_json: a request body (other than whitespace, {} or null) on an operation that takes none; invalid_idempotency_key: an Idempotency-Key on an operation that does not honour it"),
			"Unauthorized":         errResp("unauthorized: no, malformed or unknown API key, or a credential outside the accepted header; the message states the deployment's rules (API Gateway or the function)"),
			"Forbidden":            errResp("forbidden: a revoked API key (API Gateway)"),
			"NotFound":             errResp("not_found: no such resource (API Gateway for a path that is no route, or the function)"),
			"MethodNotAllowed":     errResp("method_not_allowed: the path has no such method; Allow lists its methods (after authentication)", "Allow"),
			"PayloadTooLarge":      errResp("payload_too_large: the body is over 256 KiB (the function) or over API Gateway's limit"),
			"UnsupportedMediaType": errResp("unsupported_media_type: Content-Type is not application/json, its charset is not UTF-8, or the body has a Content-Encoding other than identity"),
			"Throttled":            errResp("throttled: over a rate limit (API Gateway's stage throttle, or the per-key or per-address WAF rule); retry after Retry-After", "Retry-After"),
			"Internal":             errResp("internal: a bug (no client input produces it); quote the request id"),
			"Unavailable":          errResp("unavailable: storage, the key lookup or a dependency is slow or down past the request's time budget; nothing was changed unless the operation says otherwise: retry after Retry-After", "Retry-After"),
		},
		Parameters: map[string]parameter{
			contract.EventIDParam:        {Name: contract.EventIDParam, In: "path", Required: true, Description: "an event's id", Schema: schema{"type": "string", "minLength": 1}},
			contract.SubscriptionIDParam: {Name: contract.SubscriptionIDParam, In: "path", Required: true, Description: "a subscription's id", Schema: schema{"type": "string", "minLength": 1}},
			"X-Correlation-Id":           {Name: "X-Correlation-Id", In: "header", Description: "echoed in the response and stored in a new event's metadata.correlation_id", Schema: visibleASCII(128)},
			"Idempotency-Key":            {Name: "Idempotency-Key", In: "header", Description: "store the event at most once per tenant and key (remembered as long as the event lives)", Schema: visibleASCII(255)},
			"recoverIdempotencyKey":      {Name: "Idempotency-Key", In: "header", Description: "name the recovery after this key: the same request sent again (a retry after a timeout) continues the same recovery, which attempts no event twice", Schema: visibleASCII(255)},
			"status":                     {Name: "status", In: "query", Description: "the status listed, or all", Schema: schema{"type": "string", "enum": []string{"received", "delivered", "failed", "retrying", "all"}, "default": "received"}},
			"event_type":                 {Name: "event_type", In: "query", Description: "only events of this type (exact match)", Schema: schemaRef("EventType")},
			"order":                      {Name: "order", In: "query", Description: "desc: newest first; asc: oldest first", Schema: schema{"type": "string", "enum": []string{"desc", "asc"}, "default": "desc"}},
			"limit":                      {Name: "limit", In: "query", Description: "the most events on the page, in decimal digits only (no sign, leading zero, space, decimal point or exponent: 05, +5 or 5.0 is a 400)", Schema: schema{"type": "integer", "minimum": 1, "maximum": 100, "default": 50}},
			"cursor":                     {Name: "cursor", In: "query", Description: "the previous page's next_cursor (bound to the query's status, event_type and order, and to the tenant)", Schema: schema{"type": "string", "minLength": 1}},
			"attemptLimit":               {Name: "limit", In: "query", Description: "the most attempts on the page, in decimal digits only (no sign, leading zero, space, decimal point or exponent: 05, +5 or 5.0 is a 400)", Schema: schema{"type": "integer", "minimum": 1, "maximum": 100, "default": 50}},
			"attemptCursor":              {Name: "cursor", In: "query", Description: "the previous page's next_cursor (bound to the subscription, the status and the tenant)", Schema: schema{"type": "string", "minLength": 1}},
			"attemptStatus":              {Name: "status", In: "query", Description: "only attempts with this outcome", Schema: schema{"type": "string", "enum": []string{"scheduled", "pending", "delivered", "failed", "gone"}}},
		},
		Headers: map[string]header{
			"X-Request-Id":     {Description: "the request's id (API Gateway's): quote it when reporting a problem", Required: true, Schema: schema{"type": "string", "minLength": 1}},
			"X-Correlation-Id": {Description: "the request's X-Correlation-Id, echoed", Schema: visibleASCII(128)},
			"Retry-After":      {Description: "seconds to wait before retrying", Required: true, Schema: schema{"type": "string", "pattern": "^[0-9]+$"}},
			"Location":         {Description: "the event's URL path, after the base path the request came through (the stage, such as /live, or a custom domain's mapping)", Required: true, Schema: schema{"type": "string", "pattern": "^(/[^/]+)*/v1/events/[^/]+$"}},
			"Allow":            {Description: "the path's methods", Required: true, Schema: schema{"type": "string", "minLength": 1}},
		},
		SecuritySchemes: map[string]any{
			"bearer": map[string]string{
				"type": "http", "scheme": "bearer",
				"description": "Authorization: Bearer <api key>, exactly once and spelled exactly so. The only form accepted while the authorizer cache is on (the default).",
			},
			"apiKeyHeader": map[string]string{
				"type": "apiKey", "in": "header", "name": contract.HeaderAPIKey,
				"description": "X-Api-Key: <api key>, accepted only by a deployment whose authorizer cache is off (AuthorizerCacheTtl 0), and never together with Authorization.",
			},
		},
	}
}
