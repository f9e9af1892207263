package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

func (e *env) createSub(t *testing.T, tenant, body string) string {
	t.Helper()
	r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: tenant, body: body})
	require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	return r.json(t)["subscription_id"].(string)
}

// GET one subscription: the list item's shape, never a secret; 404 for
// an unknown id, a malformed one or another tenant's.
func TestGetSubscription(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	id := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks","event_types":["order.paid"],"description":"billing"}`)
	r := e.do(req{method: "GET", path: "/v1/subscriptions/" + id, tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	got := r.json(t)
	list := e.do(req{method: "GET", path: "/v1/subscriptions", tenant: "tenant-a"}).json(t)["subscriptions"].([]any)
	assert.Equal(t, list[0], got, "the list item's shape")
	assert.NotContains(t, got, "secret")
	assert.NotContains(t, string(r.body), "whsec_")

	for _, c := range []struct{ tenant, path string }{
		{"tenant-b", "/v1/subscriptions/" + id},
		{"tenant-a", "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{"tenant-a", "/v1/subscriptions/not-an-id"},
		{"tenant-a", "/v1/subscriptions/%23count"},
	} {
		r := e.do(req{method: "GET", path: c.path, tenant: c.tenant})
		assert.Equal(t, http.StatusNotFound, r.code, "%v: %s", c, r.body)
		assert.Equal(t, "not_found", r.errCode(t))
	}
	r = e.do(req{method: "PUT", path: "/v1/subscriptions/" + id, tenant: "tenant-a"})
	assert.Equal(t, http.StatusMethodNotAllowed, r.code)
	assert.Equal(t, "DELETE, GET, PATCH", r.header.Get("Allow"))
}

// PATCH changes the fields it names, with create's rules and target
// check; re-enabling a disabled subscription leaves its circuit half-open
// (the next delivery is a probe).
func TestPatchSubscription(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	e := newEnv(t, withWebhooks(t, &redeliveries{}), withNow(func() time.Time { return now }))
	ctx := context.Background()
	id := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks","event_types":["order.paid"],"description":"billing"}`)
	path := "/v1/subscriptions/" + id

	r := e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: `{"description":"payments","event_types":["a.b","a.b","c"]}`})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	got := r.json(t)
	assert.Equal(t, "payments", got["description"])
	assert.Equal(t, []any{"a.b", "c"}, got["event_types"])
	assert.Equal(t, "https://example.com/hooks", got["url"], "unchanged")
	assert.NotContains(t, got, "secret")
	read := e.do(req{method: "GET", path: path, tenant: "tenant-a"}).json(t)
	assert.Equal(t, got, read)

	// A failing endpoint with an open circuit gets another path on the
	// same server: still open; a URL on another server: closed.
	for i := range 3 {
		_, err := e.store.SubscriptionFailed(ctx, "tenant-a", id, "", now.Add(time.Duration(i)*time.Second), time.Hour, "r")
		require.NoError(t, err)
	}
	_, err := e.store.OpenCircuit(ctx, "tenant-a", id, "", now, now.Add(time.Hour), time.Hour)
	require.NoError(t, err)
	r = e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: `{"url":"https://example.com/new?v=2"}`})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	sub, err := e.store.GetSubscription(ctx, "tenant-a", id)
	require.NoError(t, err)
	assert.Equal(t, "https://example.com/new?v=2", sub.URL)
	assert.Equal(t, now.Add(time.Hour), sub.CircuitOpenUntil, "the same server: its circuit stays open")
	assert.Equal(t, 3, sub.ConsecutiveFailures)
	r = e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: `{"url":"https://example.com:8443/new"}`})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	sub, err = e.store.GetSubscription(ctx, "tenant-a", id)
	require.NoError(t, err)
	assert.Equal(t, "https://example.com:8443/new", sub.URL)
	assert.True(t, sub.CircuitOpenUntil.IsZero(), "another server (port): closed")
	assert.Zero(t, sub.ConsecutiveFailures)

	// Disabled (here through the API), then re-enabled with a probe.
	r = e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: `{"disabled":true}`})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	assert.Equal(t, true, r.json(t)["disabled"])
	r = e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: `{"disabled":false}`})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	assert.Equal(t, false, r.json(t)["disabled"])
	assert.NotContains(t, r.json(t), "disabled_reason")
	sub, err = e.store.GetSubscription(ctx, "tenant-a", id)
	require.NoError(t, err)
	assert.True(t, sub.HalfOpen(now), "the next delivery is a probe")

	// Another tenant, unknown ids: 404, nothing changed.
	for _, c := range []struct{ tenant, path string }{{"tenant-b", path}, {"tenant-a", "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"tenant-a", "/v1/subscriptions/x"}} {
		r := e.do(req{method: "PATCH", path: c.path, tenant: c.tenant, body: `{"description":"mine now"}`})
		assert.Equal(t, http.StatusNotFound, r.code, "%v", c)
		assert.Equal(t, "not_found", r.errCode(t))
	}
	assert.Equal(t, "payments", e.do(req{method: "GET", path: path, tenant: "tenant-a"}).json(t)["description"])

	// Hostile and confused bodies: a 400 naming the field, nothing written.
	before := e.do(req{method: "GET", path: path, tenant: "tenant-a"}).body
	for _, tc := range []struct{ body, code, msg string }{
		{`{}`, "invalid_subscription", "the patch is empty"},
		{`{"url":"http://example.com/x"}`, "invalid_target", "must be https"},
		{`{"url":"https://internal.corp/x"}`, "invalid_target", "private address"},
		{`{"url":null}`, "invalid_subscription", "url is null"},
		{`{"url":5}`, "invalid_json", `"url"`},
		{`{"disabled":"no"}`, "invalid_json", `"disabled"`},
		{`{"event_types":"a"}`, "invalid_json", `"event_types"`},
		{`{"event_types":["bad type"]}`, "invalid_subscription", "event_types[0]"},
		{`{"description":"` + strings.Repeat("x", 257) + `"}`, "invalid_subscription", "description is 257 characters"},
		{`{"secret":"whsec_x"}`, "invalid_json", `unknown field "secret"`},
		{`{"URL":"https://example.com/x"}`, "invalid_json", "case-sensitive"},
		{`{"description":"a","description":"b"}`, "invalid_json", "duplicate"},
		{`[]`, "invalid_json", "JSON object"},
		{`{"description":"a"`, "invalid_json", ""},
	} {
		r := e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: tc.body})
		assert.Equal(t, http.StatusBadRequest, r.code, "%s: %s", tc.body, r.body)
		assert.Equal(t, tc.code, r.errCode(t), "%s: %s", tc.body, r.body)
		assert.Contains(t, r.json(t)["error"].(map[string]any)["message"], tc.msg, tc.body)
	}
	r = e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: `{"description":"` + strings.Repeat("x", 300*1024) + `"}`})
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.code)
	assert.Equal(t, string(before), string(e.do(req{method: "GET", path: path, tenant: "tenant-a"}).body), "nothing written")
}

// GET /v1/subscriptions/{id}/attempts pages the subscription's attempts,
// newest first, with a signed cursor bound to the tenant, the
// subscription and the filter.
func TestSubscriptionAttempts(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	ctx := context.Background()
	id := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks"}`)
	other := e.createSub(t, "tenant-a", `{"url":"https://example.com/other"}`)
	base := time.Now().UTC().Truncate(time.Second)
	var ids []string
	for i := range 5 {
		ev := storeEvent(t, e, "tenant-a", base.Add(time.Duration(i)*time.Second))
		ids = append(ids, ev.ID)
		outcome := "delivered"
		if i%2 == 1 {
			outcome = "failed"
		}
		recordAttempt(t, e, "tenant-a", ev, id, 1, outcome)
	}
	recordAttempt(t, e, "tenant-a", event.Event{ID: ids[0], TTL: base.Add(time.Hour).Unix()}, other, 1, "delivered")

	path := "/v1/subscriptions/" + id + "/attempts"
	r := e.do(req{method: "GET", path: path, tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	body := r.json(t)
	assert.Equal(t, id, body["subscription_id"])
	assert.Nil(t, body["next_cursor"])
	list := body["attempts"].([]any)
	require.Len(t, list, 5)
	first := list[0].(map[string]any)
	assert.Equal(t, ids[4], first["event_id"], "newest first")
	assert.Equal(t, id, first["subscription_id"])
	assert.EqualValues(t, "1", fmt.Sprint(first["attempt"]))

	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		p := path + "?limit=2"
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := e.do(req{method: "GET", path: p, tenant: "tenant-a"})
		require.Equal(t, http.StatusOK, r.code, "%s", r.body)
		b := r.json(t)
		for _, a := range b["attempts"].([]any) {
			seen = append(seen, a.(map[string]any)["event_id"].(string))
		}
		if b["next_cursor"] == nil {
			break
		}
		cursor = b["next_cursor"].(string)
		// The cursor is bound to its tenant, subscription and filter.
		for _, c := range []struct{ tenant, path string }{
			{"tenant-b", path + "?cursor=" + cursor},
			{"tenant-a", "/v1/subscriptions/" + other + "/attempts?cursor=" + cursor},
			{"tenant-a", path + "?status=failed&cursor=" + cursor},
			{"tenant-a", path + "?cursor=" + cursor[:len(cursor)-2] + "AA"},
		} {
			r := e.do(req{method: "GET", path: c.path, tenant: c.tenant})
			assert.Equal(t, http.StatusBadRequest, r.code, "%v: %s", c, r.body)
			assert.Equal(t, "invalid_cursor", r.errCode(t))
		}
	}
	assert.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, seen)

	r = e.do(req{method: "GET", path: path + "?status=failed", tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	var failed []string
	for _, a := range r.json(t)["attempts"].([]any) {
		failed = append(failed, a.(map[string]any)["event_id"].(string))
	}
	assert.Equal(t, []string{ids[3], ids[1]}, failed)

	for _, q := range []string{"limit=0", "limit=101", "limit=x", "status=weird", "cursor=", "limit=1&limit=2", "order=asc", "%zz"} {
		r := e.do(req{method: "GET", path: path + "?" + q, tenant: "tenant-a"})
		assert.Equal(t, http.StatusBadRequest, r.code, "%s: %s", q, r.body)
		assert.Equal(t, "invalid_parameter", r.errCode(t), q)
	}
	for _, c := range []struct{ tenant, path string }{
		{"tenant-b", path},
		{"tenant-a", "/v1/subscriptions/sub_aaaaaaaaaaaaaaaaaaaaaaaaaa/attempts"},
		{"tenant-a", "/v1/subscriptions/nope/attempts"},
	} {
		r := e.do(req{method: "GET", path: c.path, tenant: c.tenant})
		assert.Equal(t, http.StatusNotFound, r.code, "%v", c)
	}
	_ = ctx
}

// storeEvent stores an event of tenant created at at.
func storeEvent(t *testing.T, e *env, tenant string, at time.Time) event.Event {
	t.Helper()
	ev, err := event.New(event.CreateRequest{EventType: "order.paid", Payload: event.Payload{}}, at, event.DefaultRetention, event.Metadata{})
	require.NoError(t, err)
	require.NoError(t, e.store.Put(context.Background(), tenant, ev))
	return ev
}

// recordAttempt records attempt n of ev to subscription subID with outcome.
func recordAttempt(t *testing.T, e *env, tenant string, ev event.Event, subID string, n int, outcome string) {
	t.Helper()
	ctx := context.Background()
	at := time.Now()
	owner := fmt.Sprintf("o-%s-%d", subID, n)
	_, claimed, err := e.store.ClaimAttempt(ctx, tenant, ev.ID, event.AttemptClaim{SubscriptionID: subID, Number: n, Owner: owner, At: at, LeaseUntil: at.Add(time.Minute)}, ev.TTL)
	require.NoError(t, err)
	require.True(t, claimed)
	require.NoError(t, e.store.FinishAttempt(ctx, tenant, ev.ID, event.Attempt{SubscriptionID: subID, Number: n, Timestamp: event.FormatTime(at), Outcome: outcome, StatusCode: 200}, owner))
}

// A description holding a control character (C0, DEL or C1) is refused on
// create and on PATCH with a 400 invalid_subscription naming description,
// and nothing is written (found by review: a line break or an escape
// sequence was stored as sent). A description stored with control
// characters before the rule (written here through the store) still reads
// back as stored, alone and in the list, and its subscription can still
// be patched: the rule applies to what a request sends, not to what is
// stored.
func TestSubscriptionDescriptionControlCharacters(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	refused := []string{`a\u0007b`, `two\nlines`, `tab\there`, `\u001b[2J`, `x\u007f`, `\u0085`, `\u009b31m`, `\u0000`}
	for _, d := range refused {
		r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks","description":"` + d + `"}`})
		assert.Equal(t, http.StatusBadRequest, r.code, "create %s: %s", d, r.body)
		assert.Equal(t, "invalid_subscription", r.errCode(t), "create %s", d)
		assert.Contains(t, r.json(t)["error"].(map[string]any)["message"], "description holds the control character U+00", "create %s", d)
	}
	assert.Equal(t, 0, e.itemCount(), "no refused create stored anything")

	id := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks","description":"billing é 😀\u00a0\u200d"}`)
	path := "/v1/subscriptions/" + id
	before := e.snapshot(t)
	for _, d := range refused {
		r := e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: `{"description":"` + d + `","disabled":true}`})
		assert.Equal(t, http.StatusBadRequest, r.code, "patch %s: %s", d, r.body)
		assert.Equal(t, "invalid_subscription", r.errCode(t), "patch %s", d)
		assert.Contains(t, r.json(t)["error"].(map[string]any)["message"], "description holds the control character U+00", "patch %s", d)
	}
	assert.Equal(t, before, e.snapshot(t), "no refused patch changed anything")
	assert.Equal(t, "billing é 😀\u00a0\u200d", e.do(req{method: "GET", path: path, tenant: "tenant-a"}).json(t)["description"], "other characters kept as sent")

	// Stored before the rule.
	legacyPath := legacyDescriptionReadsBack(t, e, id, "bell\a nul\x00 esc\x1b[31m tab\t line\nnel\u0085 del\x7f end")
	r := e.do(req{method: "PATCH", path: legacyPath, tenant: "tenant-a", body: `{"description":"cleaned"}`})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	assert.Equal(t, "cleaned", r.json(t)["description"])
}

// A description holding a bidirectional control, a line or paragraph
// separator or another invisible format character is a 400
// invalid_subscription naming the field and the code point, on create and
// on patch, and nothing is written; text in any script, with the joiners
// it needs, and emoji sequences are stored and read back as sent; and a
// description stored with such characters before the rule still reads
// back as stored, in the subscription and in the list, and its
// subscription can be patched.
func TestSubscriptionDescriptionInvisibleCharacters(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	refused := map[string]string{ // the description as JSON string content -> its code point
		`user\u202e \u2066// admin\u2069\u2066`: "U+202E", `\u202a`: "U+202A", `\u2067x`: "U+2067", `x\u2068`: "U+2068",
		`\u061c`: "U+061C", `\u200e`: "U+200E", `\u200f`: "U+200F", `one\u2028two`: "U+2028", `\u2029`: "U+2029",
		`pay\u200bments`: "U+200B", `\u2060`: "U+2060", `\ufeffbilling`: "U+FEFF", `\u00ad`: "U+00AD", `\udb40\udc41`: "U+E0041",
	}
	for d, cp := range refused {
		r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks","description":"` + d + `"}`})
		assert.Equal(t, http.StatusBadRequest, r.code, "create %s: %s", d, r.body)
		assert.Equal(t, "invalid_subscription", r.errCode(t), "create %s", d)
		assert.Regexp(t, `^description holds the [a-z ]+ `+regexp.QuoteMeta(cp)+` at character \d+: `, r.json(t)["error"].(map[string]any)["message"], "create %s", d)
	}
	assert.Equal(t, 0, e.itemCount(), "no refused create stored anything")

	kept := []string{
		"مرحبا بالعالم", "שלום עולם", "क्\u200dष मराठी", "می\u200cخواهم",
		"👨\u200d👩\u200d👧\u200d👦 team", "🏳\ufe0f\u200d🌈 🇫🇷 👍🏽", "\u0600\u0661\u0662",
	}
	id := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks","description":"plain"}`)
	path := "/v1/subscriptions/" + id
	before := e.snapshot(t)
	for d, cp := range refused {
		r := e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: `{"description":"` + d + `","disabled":true}`})
		assert.Equal(t, http.StatusBadRequest, r.code, "patch %s: %s", d, r.body)
		assert.Equal(t, "invalid_subscription", r.errCode(t), "patch %s", d)
		assert.Contains(t, r.json(t)["error"].(map[string]any)["message"], " "+cp+" at character ", "patch %s", d)
	}
	assert.Equal(t, before, e.snapshot(t), "no refused patch changed anything")
	for _, d := range kept {
		body, err := json.Marshal(map[string]string{"url": "https://example.com/hooks", "description": d})
		require.NoError(t, err)
		created := e.createSub(t, "tenant-a", string(body))
		assert.Equal(t, d, e.do(req{method: "GET", path: "/v1/subscriptions/" + created, tenant: "tenant-a"}).json(t)["description"], "created and read back as sent")
		r := e.do(req{method: "DELETE", path: "/v1/subscriptions/" + created, tenant: "tenant-a"})
		require.Equal(t, http.StatusOK, r.code, "%s", r.body)
		body, err = json.Marshal(map[string]string{"description": d})
		require.NoError(t, err)
		r = e.do(req{method: "PATCH", path: path, tenant: "tenant-a", body: string(body)})
		require.Equal(t, http.StatusOK, r.code, "patch %+q: %s", d, r.body)
		assert.Equal(t, d, r.json(t)["description"], "patched as sent")
		assert.Equal(t, d, e.do(req{method: "GET", path: path, tenant: "tenant-a"}).json(t)["description"], "patched and read back as sent")
	}

	// Stored before the rule.
	legacyDescriptionReadsBack(t, e, id, "user\u202e \u2066// admin\u2069\u2066 zw\u200bsp bom\ufeff ls\u2028ps\u2029 tag\U000e0041 end")
}

// legacyDescriptionReadsBack stores a subscription of tenant-a (its
// secrets and creation time copied from subscription id) whose
// description legacy was stored before a rule that now refuses it, and
// checks that it reads back as stored, alone and listed, and is kept by a
// patch of another field. It returns the subscription's path.
func legacyDescriptionReadsBack(t *testing.T, e *env, id, legacy string) string {
	t.Helper()
	ctx := context.Background()
	stored, err := e.store.GetSubscription(ctx, "tenant-a", id)
	require.NoError(t, err)
	legacyID, err := event.NewSubscriptionID(nil)
	require.NoError(t, err)
	require.NoError(t, e.store.CreateSubscription(ctx, "tenant-a", event.Subscription{
		ID: legacyID, URL: "https://example.com/legacy", EventTypes: []string{}, Description: legacy,
		CreatedAt: stored.CreatedAt, Secrets: stored.Secrets,
	}))
	legacyPath := "/v1/subscriptions/" + legacyID
	r := e.do(req{method: "GET", path: legacyPath, tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	assert.Equal(t, legacy, r.json(t)["description"], "read back as stored")
	r = e.do(req{method: "GET", path: "/v1/subscriptions", tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	var descs []any
	for _, s := range r.json(t)["subscriptions"].([]any) {
		descs = append(descs, s.(map[string]any)["description"])
	}
	assert.Contains(t, descs, legacy, "listed as stored")
	r = e.do(req{method: "PATCH", path: legacyPath, tenant: "tenant-a", body: `{"disabled":true}`})
	require.Equal(t, http.StatusOK, r.code, "a patch of another field: %s", r.body)
	assert.Equal(t, legacy, r.json(t)["description"], "kept by a patch that does not name it")
	return legacyPath
}
