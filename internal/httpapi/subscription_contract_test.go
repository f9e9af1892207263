package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract/openapi"
	"github.com/triggers-dev/triggers/internal/event"
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

// A receiver may answer any three-digit status (Go's client takes 000 to
// 999, and 600-999 are not HTTP statuses); the attempt records it as
// status_code, which the document bounded to 100-599: the attempts lists
// of an endpoint answering 999 were unlike the document. The document now
// says what is recorded: the receiver's status as it answered, 1 to 999.
func TestAttemptStatusCodeAsTheReceiverAnswered(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	check := docChecker(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(999) }))
	t.Cleanup(srv.Close)
	client := webhook.NewHTTPClient(webhook.ClientOptions{AllowPrivate: true, TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig})

	subID := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks"}`)
	ev := storeEvent(t, e, "tenant-a", time.Now())
	// What the webhook function does for one attempt: claim, send, finish.
	at := time.Now()
	_, claimed, err := e.store.ClaimAttempt(ctx, "tenant-a", ev.ID, event.AttemptClaim{SubscriptionID: subID, Number: 1, Owner: "o", At: at, LeaseUntil: at.Add(time.Minute)}, ev.TTL)
	require.NoError(t, err)
	require.True(t, claimed)
	res := webhook.Send(ctx, client, webhook.Request{URL: srv.URL, MsgID: ev.ID, Body: []byte(`{}`), Secrets: []webhook.Secret{webhook.NewSecret()}})
	require.Equal(t, 999, res.StatusCode, "%+v", res)
	require.NoError(t, e.store.FinishAttempt(ctx, "tenant-a", ev.ID, event.Attempt{
		SubscriptionID: subID, Number: 1, Timestamp: event.FormatTime(at), Outcome: string(res.Outcome),
		StatusCode: res.StatusCode, LatencyMs: res.Latency.Milliseconds(), Error: res.Error,
	}, "o"))

	for _, path := range []string{"/v1/events/" + ev.ID + "/attempts", "/v1/subscriptions/" + subID + "/attempts"} {
		r := req{method: "GET", path: path, tenant: "tenant-a"}
		got := e.do(r)
		require.Equal(t, http.StatusOK, got.code, "%s: %s", path, got.body)
		assert.Contains(t, string(got.body), `"status_code":999`, path)
		assert.Contains(t, string(got.body), `"outcome":"failed"`, path)
		check(r, got)
	}
}

// A create cannot be deduplicated (its secret is shown once, and only the
// webhook function may unseal it to show it again), yet an
// Idempotency-Key on it was ignored without a word: a client retrying a
// create after a timeout, trusting the key, got a second subscription,
// every event delivered twice, one copy signed with a secret it never
// saw. The key is refused now, as on the batch route, before anything is
// sealed or stored.
func TestCreateSubscriptionRefusesIdempotencyKey(t *testing.T) {
	var seals *countingSealer
	e := newEnv(t, func(c *httpapi.Config) {
		withWebhooks(t, &redeliveries{})(c)
		seals = &countingSealer{SecretSealer: c.Webhooks.Secrets}
		c.Webhooks.Secrets = seals
	})
	check := docChecker(t)
	for _, key := range []string{"create-hooks-1", "create-hooks-1", ""} {
		r := req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks"}`, headers: map[string]string{"Idempotency-Key": key}}
		got := e.do(r)
		assert.Equal(t, http.StatusBadRequest, got.code, "%q: %s", key, got.body)
		assert.Equal(t, "invalid_idempotency_key", got.errCode(t), "%q", key)
		assert.Contains(t, string(got.body), "Idempotency-Key is not supported on subscription creation", "%q", key)
		check(r, got)
	}
	assert.Zero(t, seals.n.Load(), "no secret sealed")
	assert.Equal(t, 0, e.itemCount(), "nothing stored")
	r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks"}`})
	assert.Equal(t, http.StatusCreated, r.code, "without the header: %s", r.body)
}

// A subscription's attempts come latest first within an event, also past
// attempt 999 (a tenant redelivering an event to an endpoint that answers
// 410 gets there one request at a time): the list's sort key held the
// number as "%03d", so 999 came before 1000, and 1000 between 100 and 101.
// Page by page too, with cursors at the new positions.
func TestSubscriptionAttemptsLatestFirstPast999(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	id := e.createSub(t, "tenant-a", `{"url":"https://example.com/hooks"}`)
	older := storeEvent(t, e, "tenant-a", time.Now().Add(-time.Minute))
	ev := storeEvent(t, e, "tenant-a", time.Now())
	recordAttempt(t, e, "tenant-a", older, id, 1, "gone")
	for _, n := range []int{1, 99, 100, 101, 998, 999, 1000, 1001, 10000} {
		recordAttempt(t, e, "tenant-a", ev, id, n, "gone")
	}
	want := []string{"10000", "1001", "1000", "999", "998", "101", "100", "99", "1", "older 1"}
	label := func(a map[string]any) string {
		if a["event_id"] == older.ID {
			return "older " + fmt.Sprint(a["attempt"])
		}
		return fmt.Sprint(a["attempt"])
	}
	path := "/v1/subscriptions/" + id + "/attempts"
	r := e.do(req{method: "GET", path: path, tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	var got []string
	for _, a := range r.json(t)["attempts"].([]any) {
		got = append(got, label(a.(map[string]any)))
	}
	assert.Equal(t, want, got, "one page")

	got = nil
	cursor := ""
	for pages := 0; pages <= len(want); pages++ {
		q := "?limit=1"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r := e.do(req{method: "GET", path: path + q, tenant: "tenant-a"})
		require.Equal(t, http.StatusOK, r.code, "%s", r.body)
		b := r.json(t)
		for _, a := range b["attempts"].([]any) {
			got = append(got, label(a.(map[string]any)))
		}
		if b["next_cursor"] == nil {
			break
		}
		cursor = b["next_cursor"].(string)
	}
	assert.Equal(t, want, got, "a page at a time")
}

// A url with a character a URL may not hold (RFC 3986) was stored as
// sent, unlike the document's url ("format": "uri"): a trailing space or
// no-break space pasted with it, a space, braces, a '%' without two hex
// digits in the query, a letter outside ASCII. Deliveries then went to
// another path than the client meant ("/hooks " is sent as "/hooks%20").
// Each is a 400 invalid_target naming the character and its place, never
// the url (it may hold a token), by create and by PATCH; nothing is
// written. Percent-encoded, the same url is fine.
func TestTargetWithCharactersOutsideURLs(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}), withTargetCheck)
	check := docChecker(t)
	id := e.createSub(t, "tenant-a", `{"url":"https://hooks.example.com/in?token=s3cret"}`)
	before := e.itemCount()
	for _, c := range []struct{ url, msg string }{
		{`https://hooks.example.com/in?token=s3cret `, `url holds ' ' at byte 41`},
		{`https://hooks.example.com/in?token=s3cret\u00a0`, `url holds "\u00a0" at byte 41`},
		{`https://hooks.example.com/my hooks?token=s3cret`, `url holds ' ' at byte 28`},
		{`https://hooks.example.com/{id}?token=s3cret`, `url holds '{' at byte 26`},
		{`https://hooks.example.com/in?token=s3cret&x=%zz`, `url holds a '%' without two hex digits after it at byte 44`},
		{`https://hooks.example.com/caf\u00e9?token=s3cret`, `url holds "é" at byte 29`},
		{`https://hooks.example.com/in?token=s3cret|x`, `url holds '|' at byte 41`},
	} {
		for _, r := range []req{
			{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"` + c.url + `"}`},
			{method: "PATCH", path: "/v1/subscriptions/" + id, tenant: "tenant-a", body: `{"url":"` + c.url + `"}`},
		} {
			got := e.do(r)
			assert.Equal(t, http.StatusBadRequest, got.code, "%s %s: %s", r.method, c.url, got.body)
			if got.code != http.StatusBadRequest {
				continue
			}
			assert.Equal(t, "invalid_target", got.errCode(t), c.url)
			msg := got.json(t)["error"].(map[string]any)["message"].(string)
			assert.Contains(t, msg, c.msg, c.url)
			assert.NotContains(t, msg, "s3cret", "the url is never repeated")
			check(r, got)
		}
	}
	assert.Equal(t, before, e.itemCount(), "nothing written")
	sub, err := e.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	assert.Equal(t, "https://hooks.example.com/in?token=s3cret", sub.URL, "unchanged")

	r := e.do(req{method: "PATCH", path: "/v1/subscriptions/" + id, tenant: "tenant-a", body: `{"url":"https://hooks.example.com/my%20hooks/caf%C3%A9?q=%7Bid%7D&a[]=1"}`})
	assert.Equal(t, http.StatusOK, r.code, "percent-encoded: %s", r.body)
}
