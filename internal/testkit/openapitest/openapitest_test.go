package openapitest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract/openapi"
	"github.com/triggers-dev/triggers/internal/testkit/openapitest"
)

const (
	event = `{"event_id":"01a2054b-f8ba-7375-9175-608e01a3eb60","event_type":"user.created",` +
		`"payload":{"n":123456789012345678901234567890123456,"deep":{"a":[1,"x",null]}},"status":"received",` +
		`"timestamp":"2026-11-22T22:06:34.682885Z","retry_count":0,"metadata":{"source_ip":"203.0.113.7","api_version":"v1","correlation_id":"c-1"}}`
	errBody = `{"error":{"code":"not_found","message":"no such event","request_id":"r-1"}}`
)

func h(kv ...string) http.Header {
	out := http.Header{"X-Request-Id": {"r-1"}, "Content-Type": {"application/json"}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			out.Del(kv[i])
			continue
		}
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// The real document compiles (every schema is valid JSON Schema 2020-12)
// and the validator accepts what the API answers and refuses what it must
// not answer, naming the problem.
func TestCheck(t *testing.T) {
	v, err := openapitest.New(openapi.Document())
	require.NoError(t, err)
	loc := "Location"
	for _, c := range []struct {
		name, method, target string
		status               int
		header               http.Header
		body, wantErr        string
	}{
		{"created", "POST", "/v1/events", 201, h(loc, "/v1/events/01a2054b-f8ba-7375-9175-608e01a3eb60"), event, ""},
		{"idempotent repeat", "POST", "/v1/events", 200, h(loc, "/v1/events/01a2054b-f8ba-7375-9175-608e01a3eb60", "X-Correlation-Id", "c-1"), event, ""},
		{"created without Location", "POST", "/v1/events", 201, h(), event, "no Location header"},
		{"created without X-Request-Id", "POST", "/v1/events", 201, h(loc, "/v1/events/x", "X-Request-Id", ""), event, "no X-Request-Id header"},
		{"an extra member", "POST", "/v1/events", 201, h(loc, "/v1/events/x"), strings.Replace(event, `"retry_count":0`, `"retry_count":0,"ttl":1`, 1), "additional properties 'ttl'"},
		{"a bad timestamp", "GET", "/v1/events/x", 200, h(), strings.Replace(event, `34.682885Z`, `34.68Z`, 1), "timestamp"},
		{"a negative retry_count", "GET", "/v1/events/x", 200, h(), strings.Replace(event, `"retry_count":0`, `"retry_count":-1`, 1), "retry_count"},
		{"not JSON", "GET", "/v1/events/x", 200, h(), `{"event_id":`, "not JSON"},
		{"text/plain", "GET", "/v1/events/x", 200, h("Content-Type", "text/plain"), event, `Content-Type "text/plain"`},
		{"a status the document does not list", "POST", "/v1/events", 418, h(), errBody, "a status the document does not list"},
		{"a 200 where the operation has none", "PATCH", "/v1/events/x", 201, h(), event, "a status the document does not list"},
		{"not found", "GET", "/v1/events/x", 404, h(), errBody, ""},
		{"an error without request_id", "GET", "/v1/events/x", 404, h(), `{"error":{"code":"not_found","message":"m"}}`, "request_id"},
		{"an error of another shape", "GET", "/v1/events/x", 404, h(), `{"message":"Not Found"}`, "error"},
		{"throttled", "GET", "/v1/inbox", 429, h("Retry-After", "1"), `{"error":{"code":"throttled","message":"slow down","request_id":"r-1"}}`, ""},
		{"throttled without Retry-After", "GET", "/v1/inbox", 429, h(), `{"error":{"code":"throttled","message":"slow down","request_id":"r-1"}}`, "no Retry-After header"},
		{"Retry-After a date", "GET", "/v1/inbox", 503, h("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT"), `{"error":{"code":"unavailable","message":"later","request_id":"r-1"}}`, "header Retry-After"},
		{"an inbox page", "GET", "/v1/inbox?limit=1&cursor=abc", 200, h(), `{"events":[` + event + `],"next_cursor":"eyJ9"}`, ""},
		{"the last page", "GET", "/v1/inbox", 200, h(), `{"events":[],"next_cursor":null}`, ""},
		{"a page without next_cursor", "GET", "/v1/inbox", 200, h(), `{"events":[]}`, "next_cursor"},
		{"a batch", "POST", "/v1/events/batch", 207, h(), `{"results":[{"index":0,"status":201,"event":` + event + `},{"index":1,"status":400,"error":{"code":"invalid_event","message":"m","request_id":"r-1"}}]}`, ""},
		{"a batch result with both", "POST", "/v1/events/batch", 207, h(), `{"results":[{"index":0,"status":201,"event":` + event + `,"error":{"code":"x","message":"m","request_id":"r"}}]}`, "oneOf"},
		{"a batch error entry with status 201", "POST", "/v1/events/batch", 207, h(), `{"results":[{"index":0,"status":201,"error":{"code":"x","message":"m","request_id":"r"}}]}`, "oneOf"},
		{"an ack", "POST", "/v1/inbox/ack", 200, h(), `{"delivered":["a"],"already_delivered":[],"unknown":[],"conflicts":[{"event_id":"b","status":"failed"}]}`, ""},
		{"a subscription list", "GET", "/v1/subscriptions", 200, h(), `{"subscriptions":[{"subscription_id":"sub_abcdefghijklmnopqrstuvwxyz","url":"https://example.com/h","event_types":[],"created_at":"2026-11-22T22:06:34.682885Z","disabled":false}]}`, ""},
		{"a listed subscription with its secret", "GET", "/v1/subscriptions", 200, h(), `{"subscriptions":[{"subscription_id":"sub_abcdefghijklmnopqrstuvwxyz","url":"https://example.com/h","event_types":[],"created_at":"2026-11-22T22:06:34.682885Z","disabled":false,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}]}`, "additional properties 'secret'"},
		{"a created subscription", "POST", "/v1/subscriptions", 201, h(), `{"subscription_id":"sub_abcdefghijklmnopqrstuvwxyz","url":"https://example.com/h","event_types":["a.b"],"created_at":"2026-11-22T22:06:34.682885Z","disabled":false,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, ""},
		{"a created subscription without its secret", "POST", "/v1/subscriptions", 201, h(), `{"subscription_id":"sub_abcdefghijklmnopqrstuvwxyz","url":"https://example.com/h","event_types":["a.b"],"created_at":"2026-11-22T22:06:34.682885Z","disabled":false}`, "secret"},
		{"webhooks disabled", "DELETE", "/v1/subscriptions/sub_x", 404, h(), `{"error":{"code":"webhooks_disabled","message":"m","request_id":"r-1"}}`, ""},
		{"another method on a route's path", "DELETE", "/v1/inbox", 405, h("Allow", "GET"), `{"error":{"code":"method_not_allowed","message":"m","request_id":"r-1"}}`, ""},
		{"405 without Allow", "GET", "/v1/events/batch", 405, h(), `{"error":{"code":"method_not_allowed","message":"m","request_id":"r-1"}}`, "no Allow header"},
		{"another method served", "DELETE", "/v1/inbox", 200, h(), `{"events":[],"next_cursor":null}`, "a status the document does not list"},
		{"an unknown path", "GET", "/v1/nope", 404, h(), `{"error":{"code":"not_found","message":"no such resource","request_id":"r-1"}}`, ""},
		{"an unknown path served", "GET", "/v1/nope", 200, h(), `{}`, "a status the document does not list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Check(c.method, c.target, c.status, c.header, []byte(c.body))
			if c.wantErr == "" {
				assert.NoError(t, err)
			} else if assert.Error(t, err) {
				assert.Contains(t, err.Error(), c.wantErr)
			}
		})
	}
	seen := v.Seen()
	assert.Equal(t, 1, seen["POST /v1/events 201"], "Seen() counts accepted responses only: %v", seen)
	assert.Equal(t, 1, seen["GET /v1/events/{event_id} 404"], "Seen() counts accepted responses only: %v", seen)
}

// Literal paths win over templates; a parameter fills one non-empty
// segment.
func TestMatch(t *testing.T) {
	v, err := openapitest.New(openapi.Document())
	require.NoError(t, err)
	for target, want := range map[string]string{
		"/v1/events/batch":           "/v1/events/batch",
		"/v1/events/abc?x=1":         "/v1/events/{event_id}",
		"/v1/events/abc/attempts":    "/v1/events/{event_id}/attempts",
		"/v1/subscriptions/s/rotate": "/v1/subscriptions/{subscription_id}/rotate",
		"/v1/inbox?limit=2":          "/v1/inbox",
		"/v1/events/":                "",
		"/v1/events/a/b":             "",
		"/v1/nope":                   "",
	} {
		assert.Equal(t, want, v.Match(target), target)
	}
}

// New refuses what is no OpenAPI 3.1 document, and a schema that does not
// compile, naming where it is.
func TestNewRefuses(t *testing.T) {
	for doc, want := range map[string]string{
		`{"openapi":`:                    "not JSON",
		`{"openapi":"3.0.3","paths":{}}`: "not an OpenAPI 3.1.0 document",
		`{"openapi":"3.1.0","paths":{},"components":{"schemas":{"Bad":{"type":5}}}}`:                                                                       "/components/schemas/Bad",
		`{"openapi":"3.1.0","paths":{"/a":{"get":{"responses":{"200":{"description":"d","content":{"application/json":{"schema":{"$ref":"#/nope"}}}}}}}}}`: "/paths/~1a/get/responses/200/content/application~1json/schema",
	} {
		_, err := openapitest.New([]byte(doc))
		if assert.Error(t, err, doc) {
			assert.Contains(t, err.Error(), want, doc)
		}
	}
}
