package localapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/localgw"
)

// Events whose JSON grows on the way out (each '<' is one byte stored and
// \u003c in the Lambda response envelope) would make a page of 10 about 15
// MB, past Lambda's 6 MB response limit, which API Gateway answers with a
// 502. Through the gateway, every page answers 200 within the limit, and
// paging lists each event once, newest first (found by review: the
// default page answered 502 for good).
func TestInboxPagesOfLargeEventsThroughGateway(t *testing.T) {
	s := serve(t, devTemplate, localgw.Options{DisableThrottling: true})
	auth := map[string]string{"Authorization": "Bearer " + s.key, "Content-Type": "application/json"}
	body := `{"event_type":"html.snapshot","payload":{"html":"` + strings.Repeat("<", 250<<10) + `"}}`
	var want []string
	for range 10 {
		res, b := s.do(t, "POST", "/live/v1/events", auth, body)
		require.Equal(t, http.StatusCreated, res.StatusCode, "%.300s", b)
		var created struct {
			ID string `json:"event_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(b), &created))
		want = append([]string{created.ID}, want...)
	}
	var got []string
	pages := 0
	for path := "/live/v1/inbox?limit=50"; ; pages++ {
		require.Less(t, pages, 20)
		res, b := s.do(t, "GET", path, auth, "")
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %.300s", path, b)
		var page struct {
			Events []struct {
				ID string `json:"event_id"`
			} `json:"events"`
			Next *string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal([]byte(b), &page))
		require.NotEmpty(t, page.Events)
		for _, e := range page.Events {
			got = append(got, e.ID)
		}
		if page.Next == nil {
			break
		}
		path = "/live/v1/inbox?limit=50&cursor=" + url.QueryEscape(*page.Next)
	}
	assert.Equal(t, want, got, "every event once, newest first")
	assert.Greater(t, pages, 2, "pages shorter than the limit")
}

// API Gateway's own answers (the 401 of a request without a key, the 404
// of an unknown path) echo the client's X-Correlation-Id as the
// function's do, and send none when the client sent none (found by
// review: only the function echoed it). The web ACL's answers cannot:
// WAF's custom responses are fixed.
func TestCorrelationIDOnGatewayResponses(t *testing.T) {
	s := serve(t, devTemplate, localgw.Options{DisableThrottling: true})
	key := map[string]string{"Authorization": "Bearer " + s.key}
	for _, c := range []struct {
		method, path, body string
		h                  map[string]string
		status             int
	}{
		{"GET", "/live/v1/inbox", "", map[string]string{}, http.StatusUnauthorized},
		{"GET", "/live/v1/nope", "", key, http.StatusNotFound},
		{"GET", "/live/v1/inbox", "", key, http.StatusOK},
	} {
		h := map[string]string{"X-Correlation-Id": "req-abc123"}
		for k, v := range c.h {
			h[k] = v
		}
		res, b := s.do(t, c.method, c.path, h, c.body)
		require.Equal(t, c.status, res.StatusCode, "%s %s: %.200s", c.method, c.path, b)
		assert.Equal(t, "req-abc123", res.Header.Get("X-Correlation-Id"), "%s %s: %d", c.method, c.path, res.StatusCode)
		res, _ = s.do(t, c.method, c.path, c.h, c.body)
		assert.Empty(t, res.Header.Values("X-Correlation-Id"), "%s %s without one", c.method, c.path)
	}
}

// The Location of a created event, followed as a client follows it (from
// the server's root), reaches the event: it starts with the stage (found
// by review: "/v1/events/<id>" without it answered API Gateway's 403).
// The same for an idempotent repeat, and on a stage with another name.
func TestLocationReachesTheEvent(t *testing.T) {
	for _, c := range []struct{ template, stage string }{{devTemplate, "/live"}, {optionsTemplate, "/v1stage"}} {
		s := serve(t, c.template, localgw.Options{DisableThrottling: true})
		h := map[string]string{"Authorization": "Bearer " + s.key, "Content-Type": "application/json"}
		for _, key := range []string{"", "retry-1", "retry-1"} {
			if key != "" {
				h["Idempotency-Key"] = key
			}
			res, b := s.do(t, "POST", c.stage+"/v1/events", h, `{"event_type":"order.paid","payload":{"n":1}}`)
			require.Less(t, res.StatusCode, 300, "%s", b)
			loc := res.Header.Get("Location")
			require.True(t, strings.HasPrefix(loc, c.stage+"/v1/events/"), "%s: Location %q", c.stage, loc)
			got, body := s.do(t, "GET", loc, map[string]string{"Authorization": "Bearer " + s.key}, "")
			assert.Equal(t, http.StatusOK, got.StatusCode, "GET %s: %.200s", loc, body)
			assert.Contains(t, body, `"event_type":"order.paid"`)
		}
	}
}

// A body the API function could never receive (about 4.6 MB and more: the
// base64 invocation passes Lambda's 6 MB limit, which API Gateway answers
// with a 500) is refused with the contract's 413 by the rate-limit web
// ACL's BodyTooLarge rule, from 1,000,000 bytes on; from 256 KiB to there,
// the function's own 413 answers (found by review: 5 MB got a 500).
func TestLargeBodiesGet413ThroughGateway(t *testing.T) {
	s := serve(t, devTemplate, localgw.Options{DisableThrottling: true})
	h := map[string]string{"Authorization": "Bearer " + s.key, "Content-Type": "application/json"}
	for _, n := range []int{300 << 10, 999_999, 1_000_000, 5 << 20, 9 << 20} {
		body := `{"event_type":"big","payload":{"s":"` + strings.Repeat("a", n-40) + `"}}`
		res, b := s.do(t, "POST", "/live/v1/events", h, body)
		assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%d bytes: %.200s", len(body), b)
		assert.Contains(t, b, `"code":"payload_too_large"`, "%d bytes", len(body))
	}
	res, b := s.do(t, "GET", "/live/v1/inbox?status=all", map[string]string{"Authorization": "Bearer " + s.key}, "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, b, `"events":[]`, "nothing stored")
}

// TriggersApiProps.Cors lets a page of an allowed origin read the answers
// as the deployment gives them: the preflight allows the API's own
// request headers, the function's answers and API Gateway's own 401 name
// the origin, another origin is not named, and a deployment without Cors
// sends no CORS header (before, only the preflight existed: a browser sent
// the request and hid the answer).
func TestCORSThroughGateway(t *testing.T) {
	const app = "https://app.example.com"
	opt := serve(t, optionsTemplate, localgw.Options{DisableThrottling: true})
	auth := map[string]string{"Authorization": "Bearer " + opt.key, "Origin": app}

	res, _ := opt.do(t, "OPTIONS", "/v1stage/v1/events", map[string]string{"Origin": app, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "idempotency-key,content-type"}, "")
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	assert.Contains(t, res.Header.Get("Access-Control-Allow-Headers"), "Idempotency-Key")
	assert.Contains(t, res.Header.Get("Access-Control-Allow-Headers"), "X-Correlation-Id")

	for _, c := range []struct {
		method, path, body string
		h                  map[string]string
		status             int
	}{
		{"GET", "/v1stage/v1/inbox", "", auth, http.StatusOK},
		{"POST", "/v1stage/v1/events", `{"event_type":"a","payload":{}}`, map[string]string{"Authorization": "Bearer " + opt.key, "Origin": app, "Content-Type": "application/json"}, http.StatusCreated},
		{"POST", "/v1stage/v1/events", `{"event_type":""}`, map[string]string{"Authorization": "Bearer " + opt.key, "Origin": app, "Content-Type": "application/json"}, http.StatusBadRequest},
		{"GET", "/v1stage/v1/inbox", "", map[string]string{"Origin": app}, http.StatusUnauthorized},
	} {
		res, b := opt.do(t, c.method, c.path, c.h, c.body)
		require.Equal(t, c.status, res.StatusCode, "%s %s: %.200s", c.method, c.path, b)
		assert.Equal(t, app, res.Header.Get("Access-Control-Allow-Origin"), "%s %s %d", c.method, c.path, c.status)
		assert.Contains(t, res.Header.Get("Access-Control-Expose-Headers"), "Location", "%s %s %d", c.method, c.path, c.status)
	}
	res, _ = opt.do(t, "GET", "/v1stage/v1/inbox", map[string]string{"Authorization": "Bearer " + opt.key, "Origin": "https://evil.example"}, "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Empty(t, res.Header.Get("Access-Control-Allow-Origin"), "an origin not allowed")
	assert.Contains(t, res.Header.Values("Vary"), "Origin")

	dev := serve(t, devTemplate, localgw.Options{DisableThrottling: true})
	res, _ = dev.do(t, "GET", "/live/v1/inbox", map[string]string{"Authorization": "Bearer " + dev.key, "Origin": app}, "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Empty(t, res.Header.Get("Access-Control-Allow-Origin"), "no Cors, no CORS header")
}

// A query string on a route that takes none is refused behind the gateway
// as by the handler alone: API Gateway decodes the query into the proxy
// event's parameters, and any parameter is a 400 invalid_parameter naming
// it ("%zz" and "a=1;b=2", which the handler alone calls malformed, arrive
// as the parameters "%zz" and "a"); nothing is stored or changed. The
// gateway's own answers come first and are unchanged: a request without a
// key gets its 401, and a CORS preflight its 204 (a page then sees the
// function's 400, with the CORS headers). An empty query is no parameter.
func TestQueryOnRouteWithoutParametersThroughGateway(t *testing.T) {
	s, auth, id := serveWithEvent(t)
	event := "/live/v1/events/" + id

	for _, c := range []struct {
		method, path, body string
		h                  map[string]string
		msg                string
	}{
		{"POST", "/live/v1/events?dry_run=1", `{"event_type":"order.paid","payload":{}}`, auth, `parameter \"dry_run\" is unknown: POST /v1/events takes no query parameter`},
		{"GET", event + "?limit=1", "", auth, `parameter \"limit\" is unknown: GET /v1/events/{event_id} takes no query parameter`},
		{"GET", event + "?%zz=1", "", auth, `parameter \"%zz\" is unknown`},
		{"GET", event + "?a=1;b=2", "", auth, `parameter \"a\" is unknown`},
		{"PATCH", event + "?status=failed", `{"status":"failed"}`, auth, `parameter \"status\" is unknown`},
		{"POST", "/live/v1/inbox/ack?x", `{"event_ids":["` + id + `"]}`, auth, `parameter \"x\" is unknown`},
		{"GET", "/live/v1/openapi.json?v=2", "", nil, `parameter \"v\" is unknown: GET /v1/openapi.json takes no query parameter`},
	} {
		res, b := s.do(t, c.method, c.path, c.h, c.body)
		assert.Equal(t, http.StatusBadRequest, res.StatusCode, "%s %s: %.300s", c.method, c.path, b)
		assert.Contains(t, b, `"code":"invalid_parameter"`, "%s %s", c.method, c.path)
		assert.Contains(t, b, c.msg, "%s %s", c.method, c.path)
	}
	res, b := s.do(t, "GET", event+"?limit=1", nil, "")
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "no key: API Gateway's 401 first: %.200s", b)
	res, b = s.do(t, "GET", event+"?", auth, "")
	require.Equal(t, http.StatusOK, res.StatusCode, "an empty query: %.200s", b)
	assert.Contains(t, b, `"status":"received"`, "no refused PATCH or ack changed the event")
	res, b = s.do(t, "GET", "/live/v1/inbox?status=all", auth, "")
	require.Equal(t, http.StatusOK, res.StatusCode, "%.200s", b)
	assert.Equal(t, 1, strings.Count(b, `"event_id"`), "no refused POST stored an event: %.300s", b)

	const app = "https://app.example.com"
	opt := serve(t, optionsTemplate, localgw.Options{DisableThrottling: true})
	res, _ = opt.do(t, "OPTIONS", "/v1stage/v1/events?dry_run=1", map[string]string{"Origin": app, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}, "")
	assert.Equal(t, http.StatusNoContent, res.StatusCode, "the gateway's preflight, whatever the query")
	res, b = opt.do(t, "POST", "/v1stage/v1/events?dry_run=1", map[string]string{"Authorization": "Bearer " + opt.key, "Origin": app, "Content-Type": "application/json"}, `{"event_type":"a","payload":{}}`)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "%.200s", b)
	assert.Equal(t, app, res.Header.Get("Access-Control-Allow-Origin"), "the page reads the 400")
}

// A body on a route that takes none is refused behind the gateway as by
// the handler alone, whether API Gateway hands it to the function
// base64-encoded (application/json is a binary media type of the
// construct's API) or as text: a 400 invalid_json naming the route, and
// nothing is changed. The same request without a body, or with one of
// only whitespace, is served. API Gateway's own 401 comes first.
func TestBodyOnRouteWithoutBodyThroughGateway(t *testing.T) {
	s, auth, id := serveWithEvent(t)
	event := "/live/v1/events/" + id
	text := map[string]string{"Authorization": "Bearer " + s.key, "Content-Type": "text/plain"}

	for _, c := range []struct {
		method, path, body string
		h                  map[string]string
		msg                string
	}{
		{"GET", event, `{"status":"failed"}`, auth, `GET /v1/events/{event_id} takes no request body: send none (this one holds \"{\" at byte 0`},
		{"GET", event, "\n not json", text, `GET /v1/events/{event_id} takes no request body: send none (this one holds \"n\" at byte 2`},
		{"POST", event + "/redeliver", `{"subscription_id":"sub_aaaaaaaaaaaaaaaaaaaaaaaaaa"}`, auth, `POST /v1/events/{event_id}/redeliver takes no request body`},
		{"DELETE", "/live/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa", `not json`, text, `DELETE /v1/subscriptions/{subscription_id} takes no request body`},
	} {
		res, b := s.do(t, c.method, c.path, c.h, c.body)
		assert.Equal(t, http.StatusBadRequest, res.StatusCode, "%s %s: %.300s", c.method, c.path, b)
		assert.Contains(t, b, `"code":"invalid_json"`, "%s %s", c.method, c.path)
		assert.Contains(t, b, c.msg, "%s %s", c.method, c.path)
	}
	res, b := s.do(t, "GET", event, nil, `{"status":"failed"}`)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "no key: API Gateway's 401 first: %.200s", b)
	for _, h := range []map[string]string{auth, text} {
		for _, body := range []string{"", " \r\n\t"} {
			res, b = s.do(t, "GET", event, h, body)
			require.Equal(t, http.StatusOK, res.StatusCode, "%q (%s): %.200s", body, h["Content-Type"], b)
			assert.Contains(t, b, `"status":"received"`, "%q", body)
		}
	}
}

// serveWithEvent serves the dev template (throttling off) and stores one
// event through its gateway: it returns the server, the headers of a
// request with its key and a JSON body, and the event's id.
func serveWithEvent(t *testing.T) (*served, map[string]string, string) {
	t.Helper()
	s := serve(t, devTemplate, localgw.Options{DisableThrottling: true})
	auth := map[string]string{"Authorization": "Bearer " + s.key, "Content-Type": "application/json"}
	res, b := s.do(t, "POST", "/live/v1/events", auth, `{"event_type":"order.paid","payload":{}}`)
	require.Equal(t, http.StatusCreated, res.StatusCode, "%s", b)
	var created struct {
		ID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(b), &created))
	return s, auth, created.ID
}
