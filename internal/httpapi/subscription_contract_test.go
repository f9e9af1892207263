package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract/openapi"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/testkit/openapitest"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// docChecker returns a function that fails the test when a response is
// unlike the OpenAPI document (status, headers, body schema).
func docChecker(t *testing.T) func(r req, got resp) {
	t.Helper()
	v, err := openapitest.New(openapi.Document())
	require.NoError(t, err)
	return func(r req, got resp) {
		t.Helper()
		path, _, _ := strings.Cut(r.path, "?")
		_, err := v.Check(r.method, path, got.code, got.header, got.body)
		assert.NoError(t, err, "%s %s", r.method, r.path)
	}
}

// withTargetCheck checks targets as deployed (webhook.ValidateTarget) with
// every name resolving to a public address.
func withTargetCheck(c *httpapi.Config) {
	c.Webhooks.CheckTarget = func(ctx context.Context, raw string) error {
		_, err := webhook.ValidateTarget(ctx, raw, dnsAnswers{})
		return err
	}
}

// A scheme in capitals ("HTTPS://", valid: schemes are case-insensitive)
// was stored and shown as sent, unlike the document's url ("^https://"):
// it is stored "https" now, by create and by PATCH, the rest as sent.
func TestTargetSchemeIsStoredLowercase(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}), withTargetCheck)
	check := docChecker(t)
	do := func(r req) resp {
		t.Helper()
		r.tenant = "tenant-a"
		got := e.do(r)
		check(r, got)
		return got
	}
	r := do(req{method: "POST", path: "/v1/subscriptions", body: `{"url":"HTTPS://Hooks.example.com/In?Token=A"}`})
	require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	assert.Equal(t, "https://Hooks.example.com/In?Token=A", r.json(t)["url"])
	id := r.json(t)["subscription_id"].(string)

	r = do(req{method: "PATCH", path: "/v1/subscriptions/" + id, body: `{"url":"hTTpS://hooks.example.com/Other"}`})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	assert.Equal(t, "https://hooks.example.com/Other", r.json(t)["url"])

	do(req{method: "GET", path: "/v1/subscriptions/" + id})
	do(req{method: "GET", path: "/v1/subscriptions"})
	sub, err := e.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	assert.Equal(t, "https://hooks.example.com/Other", sub.URL, "as stored")
}
