package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/contract/openapi"
	"github.com/triggers-dev/triggers/internal/event"
)

// documentOperations returns each route's operation in the OpenAPI
// document, its parameters resolved ($ref) into "parameters".
func documentOperations(t *testing.T) map[contract.Route]map[string]any {
	t.Helper()
	var root any
	require.NoError(t, json.Unmarshal(openapi.Document(), &root))
	out := map[contract.Route]map[string]any{}
	for _, r := range contract.Routes() {
		op, err := openapi.Resolve(root, "#/paths/"+strings.ReplaceAll(r.Path, "/", "~1")+"/"+strings.ToLower(r.Method))
		require.NoError(t, err, "%s", r)
		m := op.(map[string]any)
		params, _ := m["parameters"].([]any)
		resolved := make([]any, 0, len(params))
		for _, p := range params {
			pm := p.(map[string]any)
			if ref, ok := pm["$ref"].(string); ok {
				v, err := openapi.Resolve(root, ref)
				require.NoError(t, err)
				pm = v.(map[string]any)
			}
			resolved = append(resolved, pm)
		}
		m["parameters"] = resolved
		out[r] = m
	}
	return out
}

// documentParams returns, by route, the names of the parameters in in
// ("query", "header") the OpenAPI document gives its operation.
func documentParams(t *testing.T, in string) map[contract.Route][]string {
	t.Helper()
	out := map[contract.Route][]string{}
	for r, op := range documentOperations(t) {
		for _, p := range op["parameters"].([]any) {
			if pm := p.(map[string]any); pm["in"] == in {
				out[r] = append(out[r], pm["name"].(string))
			}
		}
	}
	return out
}

// routeRequests returns a request that succeeds for every route of
// contract.Routes(), on fixtures it makes for tenant-a in e (events of
// type typ, one failed, one to ack; a subscription with a description).
// Requests for the new things it makes use typ too.
func routeRequests(t *testing.T, e *env, typ string) map[contract.Route]req {
	t.Helper()
	ev := e.post("tenant-a", typ, `{}`)
	acked := e.post("tenant-a", typ, `{}`)
	failed := e.post("tenant-a", typ, `{}`)
	e.moveTo("tenant-a", failed.ID, event.Failed)
	sub := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks","description":"before"}`)
	since := event.FormatTime(time.Now().Add(-time.Hour))
	type R = contract.Route
	requests := map[R]req{
		{Method: "POST", Path: contract.PathEvents}:              {body: `{"event_type":"` + typ + `.new","payload":{}}`},
		{Method: "POST", Path: contract.PathEventsBatch}:         {body: `{"events":[{"event_type":"` + typ + `.new","payload":{}}]}`},
		{Method: "GET", Path: contract.PathEvent}:                {path: "/v1/events/" + ev.ID},
		{Method: "PATCH", Path: contract.PathEvent}:              {path: "/v1/events/" + ev.ID, body: `{"status":"failed"}`},
		{Method: "POST", Path: contract.PathInboxAck}:            {body: `{"event_ids":["` + acked.ID + `"]}`},
		{Method: "GET", Path: contract.PathEventAttempts}:        {path: "/v1/events/" + ev.ID + "/attempts"},
		{Method: "POST", Path: contract.PathEventRedeliver}:      {path: "/v1/events/" + failed.ID + "/redeliver"},
		{Method: "GET", Path: contract.PathSubscriptions}:        {},
		{Method: "POST", Path: contract.PathSubscriptions}:       {body: `{"url":"https://example.com/other"}`},
		{Method: "DELETE", Path: contract.PathSubscription}:      {path: "/v1/subscriptions/" + sub},
		{Method: "POST", Path: contract.PathSubscriptionRotate}:  {path: "/v1/subscriptions/" + sub + "/rotate"},
		{Method: "GET", Path: contract.PathSubscription}:         {path: "/v1/subscriptions/" + sub},
		{Method: "PATCH", Path: contract.PathSubscription}:       {path: "/v1/subscriptions/" + sub, body: `{"description":"after"}`},
		{Method: "POST", Path: contract.PathSubscriptionRecover}: {path: "/v1/subscriptions/" + sub + "/recover", body: `{"since":"` + since + `"}`},
		{Method: "GET", Path: contract.PathOpenAPI}:              {},
		{Method: "GET", Path: contract.PathInbox}:                {},
		{Method: "GET", Path: contract.PathSubscriptionAttempts}: {path: "/v1/subscriptions/" + sub + "/attempts"},
	}
	for r, rq := range requests {
		rq.method = r.Method
		if rq.path == "" {
			rq.path = r.Path
		}
		if !r.Public() {
			rq.tenant = "tenant-a"
		}
		requests[r] = rq
	}
	for _, r := range contract.Routes() {
		_, ok := requests[r]
		require.True(t, ok, "no request for %s: add one", r)
	}
	return requests
}
