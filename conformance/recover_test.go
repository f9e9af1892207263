package conformance

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Recovering a subscription: 202 with what was queued; hostile bodies,
// another tenant's subscription, malformed ids and a disabled
// subscription refused with the contract's JSON errors. A deployment
// without webhook delivery answers 404 webhooks_disabled.
func TestSubscriptionRecover(t *testing.T) {
	tg := api(t)
	tg.writes(t)
	since := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	r := tg.do(t, "POST", "/v1/subscriptions", jsonBearer(tg.key), []byte(`{"url":"https://example.com/conformance-recover","event_types":["conformance.recover"]}`))
	if r.Status == http.StatusNotFound && r.ErrorCode() == "webhooks_disabled" {
		r := tg.do(t, "POST", "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa/recover", jsonBearer(tg.key), []byte(`{"since":"`+since+`"}`))
		assert.Equal(t, http.StatusNotFound, r.Status, "%s", r)
		assert.Equal(t, "webhooks_disabled", r.ErrorCode())
		return
	}
	require.Equal(t, http.StatusCreated, r.Status, "%s", r)
	id := r.JSON(t)["subscription_id"].(string)
	sub := "/v1/subscriptions/" + id
	path := sub + "/recover"
	t.Cleanup(func() { tg.do(t, "DELETE", sub, bearer(tg.key), nil) })

	r = tg.do(t, "POST", path, jsonBearer(tg.key), []byte(`{"since":"`+since+`"}`))
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r)
	got := r.JSON(t)
	assert.Equal(t, true, got["queued"])
	assert.Equal(t, id, got["subscription_id"])
	assert.NotEmpty(t, got["recovery_id"])
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, got["since"])
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, got["until"])

	// A request sent again with its Idempotency-Key continues the same
	// recovery; a bad key is refused.
	key := "conformance-" + id
	first := tg.do(t, "POST", path, jsonBearer(tg.key, "Idempotency-Key", key), []byte(`{"since":"`+since+`"}`))
	require.Equal(t, http.StatusAccepted, first.Status, "%s", first)
	again := tg.do(t, "POST", path, jsonBearer(tg.key, "Idempotency-Key", key), []byte(`{"since":"`+since+`"}`))
	require.Equal(t, http.StatusAccepted, again.Status, "%s", again)
	assert.Equal(t, first.JSON(t)["recovery_id"], again.JSON(t)["recovery_id"])
	assert.NotEqual(t, got["recovery_id"], first.JSON(t)["recovery_id"])
	r = tg.do(t, "POST", path, jsonBearer(tg.key, "Idempotency-Key", strings.Repeat("k", 256)), []byte(`{"since":"`+since+`"}`))
	assert.Equal(t, http.StatusBadRequest, r.Status, "%s", r)
	assert.Equal(t, "invalid_idempotency_key", r.ErrorCode())

	for _, c := range []struct {
		body   string
		status int
		code   string
		msg    string
	}{
		{`{}`, 400, "invalid_recover", "since"},
		{`{"since":null}`, 400, "invalid_recover", "since"},
		{`{"since":"yesterday"}`, 400, "invalid_recover", "since"},
		{`{"since":"2026-11-22T10:00:00"}`, 400, "invalid_recover", "since"},
		{`{"since":"` + since + `","until":"2999-01-01T00:00:00Z"}`, 400, "invalid_recover", "until"},
		{`{"since":"` + since + `","until":"` + since + `"}`, 400, "invalid_recover", "since"},
		{`{"since":"2000-01-01T00:00:00Z"}`, 400, "invalid_recover", "retention"},
		{`{"since":5}`, 400, "invalid_json", "since"},
		{`{"since":"` + since + `","since":"` + since + `"}`, 400, "invalid_json", "duplicate"},
		{`{"since":"` + since + `","cursor":"x"}`, 400, "invalid_json", "cursor"},
		{`{"since":"` + since + `"`, 400, "invalid_json", ""},
		{"{\"since\":\"\xff\"}", 400, "invalid_json", ""},
		{`{"since":"` + strings.Repeat("x", 300*1024) + `"}`, 413, "", ""},
	} {
		r := tg.do(t, "POST", path, jsonBearer(tg.key), []byte(c.body))
		what := c.body[:min(len(c.body), 60)]
		assert.Equal(t, c.status, r.Status, "%s: %s", what, r)
		if c.code != "" {
			assert.Equal(t, c.code, r.ErrorCode(), what)
			e, _ := r.JSON(t)["error"].(map[string]any)
			assert.Contains(t, e["message"], c.msg, what)
		}
	}

	// Another tenant's subscription, and ids that are none: 404.
	for _, c := range []struct{ key, path string }{
		{tg.key2, path},
		{tg.key, "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa/recover"},
		{tg.key, "/v1/subscriptions/not-an-id/recover"},
		{tg.key, "/v1/subscriptions/" + strings.Repeat("s", 600) + "/recover"},
		{tg.key, "/v1/subscriptions/%23count/recover"},
	} {
		r := tg.do(t, "POST", c.path, jsonBearer(c.key), []byte(`{"since":"`+since+`"}`))
		assert.Equal(t, http.StatusNotFound, r.Status, "%s: %s", c.path, r)
		assert.Equal(t, "not_found", r.ErrorCode(), c.path)
	}

	// Disabled: re-enable first.
	r = tg.do(t, "PATCH", sub, jsonBearer(tg.key), []byte(`{"disabled":true}`))
	require.Equal(t, http.StatusOK, r.Status, "%s", r)
	r = tg.do(t, "POST", path, jsonBearer(tg.key), []byte(`{"since":"`+since+`"}`))
	assert.Equal(t, http.StatusConflict, r.Status, "%s", r)
	assert.Equal(t, "subscription_disabled", r.ErrorCode())

	r = tg.do(t, "GET", path, bearer(tg.key), nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.Status, "%s", r)
	r = tg.do(t, "POST", path, nil, []byte(`{"since":"`+since+`"}`))
	assert.Equal(t, http.StatusUnauthorized, r.Status, "%s", r)
}
