package localapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/localgw"
)

// Behind a custom domain with a base path mapping, API Gateway's proxy
// event carries the base path in path ("/triggers/v1/events") but not in
// resource. Every route must still work (an earlier version routed on the raw path and
// answered 404 to all of them), and an unknown method is still the
// function's 405.
func TestCustomDomainBasePathRoutesEveryRoute(t *testing.T) {
	s := serve(t, devTemplate, localgw.Options{CustomDomain: &localgw.CustomDomain{DomainName: "api.example.com", BasePath: "triggers"}})
	auth := map[string]string{"Authorization": "Bearer " + s.key, "Content-Type": "application/json"}

	res, body := s.do(t, "POST", "/triggers/v1/events", auth, `{"event_type":"order.paid","payload":{"n":1}}`)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	var e struct {
		ID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e))

	for _, c := range []struct{ method, path, body string }{
		{"GET", "/triggers/v1/events/" + e.ID, ""},
		{"GET", "/triggers/v1/inbox", ""},
		{"POST", "/triggers/v1/events/batch", `{"events":[{"event_type":"a","payload":{}}]}`},
		{"PATCH", "/triggers/v1/events/" + e.ID, `{"status":"failed"}`},
		{"POST", "/triggers/v1/inbox/ack", `{"event_ids":["` + e.ID + `"]}`},
	} {
		res, body := s.do(t, c.method, c.path, auth, c.body)
		assert.Less(t, res.StatusCode, 300, "%s %s: %d %s", c.method, c.path, res.StatusCode, body)
	}
	res, body = s.do(t, "DELETE", "/triggers/v1/inbox", auth, "")
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode, body)
	assert.Equal(t, "GET", res.Header.Get("Allow"))
	// The stage path is not served on the custom domain.
	res, _ = s.do(t, "GET", "/live/v1/inbox", auth, "")
	assert.NotEqual(t, http.StatusOK, res.StatusCode)
}
