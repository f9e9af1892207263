package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/dev/kmslocal/kmstest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
	"github.com/triggers-dev/triggers/schema"
)

// redeliveries records the Redeliver calls (the retry queue's seam).
type redeliveries struct {
	mu    sync.Mutex
	calls []string
	fail  error
}

func (r *redeliveries) redeliver(_ context.Context, tenant string, e event.Event, round string, _ time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.calls = append(r.calls, fmt.Sprintf("%s/%s/%s/rc%d", tenant, e.ID, round, e.RetryCount))
	return nil
}

// recover records the Recover calls (the same seam).
func (r *redeliveries) recover(_ context.Context, tenant, subID, id string, since, until, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.calls = append(r.calls, fmt.Sprintf("recover %s/%s/%s [%s, %s) at %s", tenant, subID, id, event.FormatTime(since), event.FormatTime(until), event.FormatTime(at)))
	return nil
}

// sealer returns a secretbox with a key of its own on the package's
// local-kms (started by the first test that needs it).
func sealer(t testing.TB) *secretbox.Box {
	t.Helper()
	kms := kmstest.Shared(t)
	b, err := secretbox.New(kms.Client, kms.Key(t), secretbox.Options{})
	require.NoError(t, err)
	return b
}

// withWebhooks turns the webhook routes on, sealing secrets on local-kms;
// targets on example.com are allowed, anything else refused (the DNS and
// address rules are webhook.ValidateTarget's, tested there).
func withWebhooks(t testing.TB, r *redeliveries) envOpt {
	box := sealer(t)
	return func(c *httpapi.Config) {
		c.Webhooks = &httpapi.Webhooks{
			Store:     c.Store.(httpapi.SubscriptionStore),
			Redeliver: r.redeliver,
			Recover:   r.recover,
			Secrets:   box,
			CheckTarget: func(_ context.Context, raw string) error {
				if !strings.HasPrefix(raw, "https://example.com/") && !strings.HasPrefix(raw, "https://example.com:8443/") {
					return errors.New("host resolves to 10.0.0.1, a private address")
				}
				return nil
			},
			RotationOverlap: time.Hour,
		}
	}
}

func TestSubscriptionLifecycle(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks","event_types":["order.paid","order.paid","user.created"],"description":"billing"}`})
	require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	created := r.json(t)
	id := created["subscription_id"].(string)
	assert.True(t, event.ValidSubscriptionID(id), id)
	secret, err := webhook.ParseSecret(created["secret"].(string))
	require.NoError(t, err, "the secret is shown once, as whsec_...")
	assert.False(t, secret.IsZero())
	assert.Equal(t, []any{"order.paid", "user.created"}, created["event_types"], "duplicates dropped, order kept")
	assert.Equal(t, "billing", created["description"])
	assert.Equal(t, false, created["disabled"])

	r = e.do(req{method: "GET", path: "/v1/subscriptions", tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code)
	list := r.json(t)["subscriptions"].([]any)
	require.Len(t, list, 1)
	got := list[0].(map[string]any)
	assert.Equal(t, id, got["subscription_id"])
	assert.NotContains(t, got, "secret", "a listed subscription never shows its secret")
	assert.NotContains(t, string(r.body), created["secret"].(string))

	// Another tenant sees none of it and cannot touch it.
	r = e.do(req{method: "GET", path: "/v1/subscriptions", tenant: "tenant-b"})
	assert.Equal(t, []any{}, r.json(t)["subscriptions"])
	r = e.do(req{method: "DELETE", path: "/v1/subscriptions/" + id, tenant: "tenant-b"})
	assert.Equal(t, http.StatusNotFound, r.code)
	assert.Equal(t, "not_found", r.errCode(t))
	r = e.do(req{method: "POST", path: "/v1/subscriptions/" + id + "/rotate", tenant: "tenant-b"})
	assert.Equal(t, http.StatusNotFound, r.code)

	// Rotation: a new secret, the previous one signs for the overlap.
	r = e.do(req{method: "POST", path: "/v1/subscriptions/" + id + "/rotate", tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	rot := r.json(t)
	assert.NotEqual(t, created["secret"], rot["secret"])
	_, err = webhook.ParseSecret(rot["secret"].(string))
	require.NoError(t, err)
	sub, err := e.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	assert.Equal(t, []string{rot["secret"].(string), created["secret"].(string)}, e.open(t, "tenant-a", id, sub.Secrets...), "stored sealed, newest first")
	require.Len(t, sub.PreviousExpires, 1)
	assert.Equal(t, rot["previous_secret_expires_at"], event.FormatTime(sub.PreviousExpires[0]))

	r = e.do(req{method: "DELETE", path: "/v1/subscriptions/" + id, tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, map[string]any{"subscription_id": id, "deleted": true}, r.json(t))
	r = e.do(req{method: "DELETE", path: "/v1/subscriptions/" + id, tenant: "tenant-a"})
	assert.Equal(t, http.StatusNotFound, r.code, "deleting twice")
}

// Hostile and confused bodies: each a 400 naming the problem, nothing
// stored.
func TestSubscriptionBadInput(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	for _, tc := range []struct{ body, code, msg string }{
		{`{}`, "invalid_subscription", "url is missing"},
		{`{"url":"http://example.com/x"}`, "invalid_target", "must be https"},
		{`{"url":"https://user:pw@example.com/x"}`, "invalid_target", "user information"},
		{`{"url":"https://example.com/x#frag"}`, "invalid_target", "fragment"},
		{`{"url":"https:///x"}`, "invalid_target", "no host"},
		{`{"url":"https://internal.corp/x"}`, "invalid_target", "private address"},
		{`{"url":"https://example.com/` + strings.Repeat("a", 2100) + `"}`, "invalid_target", "at most 2048"},
		{`{"url":"https://example.com/x","event_types":["bad type"]}`, "invalid_subscription", "event_types[0]"},
		{`{"url":"https://example.com/x","description":"` + strings.Repeat("é", 257) + `"}`, "invalid_subscription", "257 characters"},
		{`{"url":"https://example.com/x","URL":"https://example.com/y"}`, "invalid_json", "URL"},
		{`{"url":"https://example.com/x","secret":"whsec_mine"}`, "invalid_json", "secret"},
		{`{"url":1}`, "invalid_json", ""},
		// A null field is refused, not taken for an omitted one; a null
		// event type names its entry, not a type "" (found by review).
		{`{"url":null}`, "invalid_subscription", "url is null"},
		{`{"url":"https://example.com/x","event_types":null}`, "invalid_subscription", "event_types is null"},
		{`{"url":"https://example.com/x","description":null}`, "invalid_subscription", "description is null"},
		{`{"url":"https://example.com/x","event_types":["a",null]}`, "invalid_subscription", "event_types[1] is null"},
	} {
		r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: tc.body})
		assert.Equal(t, http.StatusBadRequest, r.code, "%s: %s", tc.body, r.body)
		assert.Equal(t, tc.code, r.errCode(t), "%s", tc.body)
		assert.Contains(t, string(r.body), tc.msg, "%s", tc.body)
	}
	assert.Equal(t, 0, e.itemCount(), "nothing stored")

	// Ids that are not subscription ids are a 404, not a 500.
	for _, id := range []string{"x", "sub_", "sub_AAAAAAAAAAAAAAAAAAAAAAAAAA", "%00", strings.Repeat("a", 300)} {
		r := e.do(req{method: "DELETE", path: "/v1/subscriptions/" + id, tenant: "tenant-a"})
		assert.Equal(t, http.StatusNotFound, r.code, "%q: %s", id, r.body)
	}
}

// countingSealer counts the secrets it is asked to seal.
type countingSealer struct {
	httpapi.SecretSealer
	n atomic.Int32
}

func (c *countingSealer) Seal(ctx context.Context, tenant, id string, secret webhook.Secret) (string, error) {
	c.n.Add(1)
	return c.SecretSealer.Seal(ctx, tenant, id, secret)
}

// A tenant at the limit gets the limit's 400 before any secret is sealed:
// no KMS call is spent on it (nor a 503 while KMS is down).
func TestSubscriptionLimit(t *testing.T) {
	var seals *countingSealer
	e := newEnv(t, func(c *httpapi.Config) {
		withWebhooks(t, &redeliveries{})(c)
		seals = &countingSealer{SecretSealer: c.Webhooks.Secrets}
		c.Webhooks.Secrets = seals
	})
	for i := range event.MaxSubscriptions {
		r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/` + string(rune('a'+i)) + `"}`})
		require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	}
	require.EqualValues(t, event.MaxSubscriptions, seals.n.Load())
	items := e.itemCount()
	r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/one-more"}`})
	assert.Equal(t, http.StatusBadRequest, r.code)
	assert.Equal(t, "invalid_subscription", r.errCode(t))
	assert.Contains(t, string(r.body), "already has 20 subscriptions, the most it may hold: delete one first")
	assert.EqualValues(t, event.MaxSubscriptions, seals.n.Load(), "no secret sealed for a tenant at the limit")
	assert.Equal(t, items, e.itemCount(), "nothing written")

	r = e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-b", body: `{"url":"https://example.com/b"}`})
	assert.Equal(t, http.StatusCreated, r.code, "the limit is per tenant: %s", r.body)
	first := e.do(req{method: "GET", path: "/v1/subscriptions", tenant: "tenant-a"}).json(t)["subscriptions"].([]any)[0].(map[string]any)
	r = e.do(req{method: "DELETE", path: "/v1/subscriptions/" + first["subscription_id"].(string), tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	r = e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/one-more"}`})
	assert.Equal(t, http.StatusCreated, r.code, "a deletion frees a place: %s", r.body)
}

// 25 concurrent creates for one tenant: exactly 20 subscriptions, and
// the other 5 a clear 400 naming the limit; nothing else is stored.
func TestSubscriptionLimitUnderConcurrency(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	const n = 25
	codes := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := e.serve(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: fmt.Sprintf(`{"url":"https://example.com/%d"}`, i)})
			codes[i], bodies[i] = r.code, string(r.body)
		})
	}
	wg.Wait()
	created := 0
	for i, c := range codes {
		switch c {
		case http.StatusCreated:
			created++
		case http.StatusBadRequest:
			assert.Contains(t, bodies[i], `"code":"invalid_subscription"`)
			assert.Contains(t, bodies[i], "already has 20 subscriptions, the most it may hold: delete one first")
		default:
			t.Errorf("create %d = %d %s", i, c, bodies[i])
		}
	}
	assert.Equal(t, event.MaxSubscriptions, created)
	r := e.do(req{method: "GET", path: "/v1/subscriptions", tenant: "tenant-a"})
	assert.Len(t, r.json(t)["subscriptions"], event.MaxSubscriptions)
}

// A DNS lookup that times out or fails for now while checking a target is
// a 503 with Retry-After (the URL may well be fine), and stores nothing;
// a name that does not exist is the client's 400.
func TestSubscriptionTargetLookupUnavailable(t *testing.T) {
	resolver := dnsAnswers{
		"slow.example.net":  &net.DNSError{Err: "i/o timeout", Name: "slow.example.net", IsTimeout: true},
		"flaky.example.net": &net.DNSError{Err: "server misbehaving", Name: "flaky.example.net", IsTemporary: true},
		"none.example.net":  &net.DNSError{Err: "no such host", Name: "none.example.net", IsNotFound: true},
	}
	e := newEnv(t, withWebhooks(t, &redeliveries{}), func(c *httpapi.Config) {
		c.Webhooks.CheckTarget = func(ctx context.Context, raw string) error {
			_, err := webhook.ValidateTarget(ctx, raw, resolver)
			return err
		}
	})
	for _, host := range []string{"slow.example.net", "flaky.example.net"} {
		r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://` + host + `/in"}`})
		assert.Equal(t, http.StatusServiceUnavailable, r.code, "%s: %s", host, r.body)
		assert.Equal(t, "unavailable", r.errCode(t))
		assert.NotEmpty(t, r.header.Get("Retry-After"), host)
	}
	r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://none.example.net/in"}`})
	assert.Equal(t, http.StatusBadRequest, r.code, "%s", r.body)
	assert.Equal(t, event.CodeInvalidTarget, r.errCode(t))
	assert.Equal(t, 0, e.itemCount(), "nothing stored")
}

// dnsAnswers is a resolver that fails with each host's error.
type dnsAnswers map[string]error

func (d dnsAnswers) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if err, ok := d[host]; ok {
		return nil, err
	}
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

// Methods: 405 with the exact Allow list.
func TestWebhookRoutesMethods(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/v1/subscriptions", "GET, POST"},
		{"PUT", "/v1/subscriptions/sub_abc", "DELETE, GET, PATCH"},
		{"POST", "/v1/subscriptions/sub_abc/attempts", "GET"},
		{"GET", "/v1/subscriptions/sub_abc/rotate", "POST"},
		{"POST", "/v1/events/x/attempts", "GET"},
		{"GET", "/v1/events/x/redeliver", "POST"},
	} {
		r := e.do(req{method: tc.method, path: tc.path, tenant: "tenant-a"})
		assert.Equal(t, http.StatusMethodNotAllowed, r.code, "%s %s", tc.method, tc.path)
		assert.Equal(t, tc.allow, r.header.Get("Allow"), "%s %s", tc.method, tc.path)
	}
	for _, p := range []string{"/v1/subscriptions/", "/v1/subscriptions/a/b", "/v1/events/x/other", "/v1/events//attempts"} {
		r := e.do(req{method: "GET", path: p, tenant: "tenant-a"})
		assert.Equal(t, http.StatusNotFound, r.code, p)
	}
}

// Attempts are the tenant's event's; redeliver re-drives only a failed
// event: it queues a named round, then moves the event to retrying with
// the round's marker.
func TestAttemptsAndRedeliver(t *testing.T) {
	ctx := context.Background()
	rd := &redeliveries{}
	e := newEnv(t, withWebhooks(t, rd))
	ev := e.post("tenant-a", "order.paid", `{"n":1}`)

	r := e.do(req{method: "GET", path: "/v1/events/" + ev.ID + "/attempts", tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, map[string]any{"event_id": ev.ID, "attempts": []any{}}, r.json(t))
	stored, err := e.store.Get(ctx, "tenant-a", ev.ID)
	require.NoError(t, err)
	at := time.Now()
	_, claimed, err := e.store.ClaimAttempt(ctx, "tenant-a", ev.ID, event.AttemptClaim{SubscriptionID: "sub_x", Number: 1, Owner: "o", At: at, LeaseUntil: at.Add(time.Minute)}, stored.TTL)
	require.NoError(t, err)
	require.True(t, claimed)
	r = e.do(req{method: "GET", path: "/v1/events/" + ev.ID + "/attempts", tenant: "tenant-a"})
	atts := r.json(t)["attempts"].([]any)
	require.Len(t, atts, 1)
	assert.Equal(t, "pending", atts[0].(map[string]any)["outcome"], "an attempt being made is listed")
	require.NoError(t, e.store.FinishAttempt(ctx, "tenant-a", ev.ID, event.Attempt{SubscriptionID: "sub_x", Number: 1, Timestamp: ev.Timestamp, Outcome: "failed", StatusCode: 502, LatencyMs: 12, Response: "bad gateway"}, "o"))
	r = e.do(req{method: "GET", path: "/v1/events/" + ev.ID + "/attempts", tenant: "tenant-a"})
	atts = r.json(t)["attempts"].([]any)
	require.Len(t, atts, 1)
	assert.Equal(t, "502", atts[0].(map[string]any)["status_code"].(interface{ String() string }).String())
	for _, hidden := range []string{"sends", "round", "followup", "lease_until", "owner", "Sends", "Round"} {
		assert.NotContains(t, atts[0], hidden)
	}
	r = e.do(req{method: "GET", path: "/v1/events/" + ev.ID + "/attempts", tenant: "tenant-b"})
	assert.Equal(t, http.StatusNotFound, r.code, "another tenant's event")

	r = e.do(req{method: "POST", path: "/v1/events/" + ev.ID + "/redeliver", tenant: "tenant-a"})
	assert.Equal(t, http.StatusConflict, r.code, "a received event is not re-driven: %s", r.body)
	assert.Empty(t, rd.calls)

	_, err = e.store.Transition(ctx, "tenant-a", ev.ID, []event.Status{event.Received}, event.Failed)
	require.NoError(t, err)
	r = e.do(req{method: "POST", path: "/v1/events/" + ev.ID + "/redeliver", tenant: "tenant-b"})
	assert.Equal(t, http.StatusNotFound, r.code)

	// The queue is down: 503, and nothing changed, so the client retries.
	rd.fail = errors.New("sqs down")
	r = e.do(req{method: "POST", path: "/v1/events/" + ev.ID + "/redeliver", tenant: "tenant-a"})
	assert.Equal(t, http.StatusServiceUnavailable, r.code)
	assert.NotEmpty(t, r.header.Get("Retry-After"))
	cur, err := e.store.Get(ctx, "tenant-a", ev.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Failed, cur.Status)
	assert.Equal(t, 0, cur.RetryCount)
	rd.fail = nil

	r = e.do(req{method: "POST", path: "/v1/events/" + ev.ID + "/redeliver", tenant: "tenant-a"})
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	got := r.event(t)
	assert.Equal(t, event.Retrying, got.Status)
	assert.Equal(t, 1, got.RetryCount)
	require.Len(t, rd.calls, 1)
	parts := strings.Split(rd.calls[0], "/")
	require.Len(t, parts, 4)
	assert.Equal(t, []string{"tenant-a", ev.ID, "rc0"}, []string{parts[0], parts[1], parts[3]}, "queued from the state read")
	assert.Regexp(t, `^[0-9a-f]{32}$`, parts[2], "a random round name")
	cur, err = e.store.Get(ctx, "tenant-a", ev.ID)
	require.NoError(t, err)
	assert.Equal(t, []any{event.Retrying, 1}, []any{cur.Status, cur.RetryCount})
	started, _, err := e.store.RedeliveryRound(ctx, "tenant-a", ev.ID, parts[2])
	require.NoError(t, err)
	assert.True(t, started, "the round's marker is written with the move")

	r = e.do(req{method: "POST", path: "/v1/events/" + ev.ID + "/redeliver", tenant: "tenant-a"})
	assert.Equal(t, http.StatusConflict, r.code, "a retrying event is not re-driven again")
	assert.Len(t, rd.calls, 1)
}

// Concurrent redeliveries of one failed event: exactly one round starts;
// every other request is a 409 (its queued round finds the event changed
// and is dropped by the webhook function).
func TestConcurrentRedeliveries(t *testing.T) {
	ctx := context.Background()
	rd := &redeliveries{}
	e := newEnv(t, withWebhooks(t, rd))
	ev := e.post("tenant-a", "order.paid", `{}`)
	_, err := e.store.Transition(ctx, "tenant-a", ev.ID, []event.Status{event.Received}, event.Failed)
	require.NoError(t, err)
	const n = 8
	codes := make([]int, n)
	redeliver := req{method: "POST", path: "/v1/events/" + ev.ID + "/redeliver", tenant: "tenant-a"}
	resps := make([]resp, n)
	var wg sync.WaitGroup
	for i := range n {
		// serve on the goroutines; the checks (require) on the test's.
		wg.Go(func() { resps[i] = e.serve(redeliver) })
	}
	wg.Wait()
	for i, r := range resps {
		codes[i] = e.checked(redeliver, r).code
	}
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	assert.Equal(t, 1, count[http.StatusAccepted], "%v", codes)
	assert.Equal(t, n-1, count[http.StatusConflict], "%v", codes)
	cur, err := e.store.Get(ctx, "tenant-a", ev.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, cur.RetryCount, "one round")
}

// Without webhook delivery deployed the routes say so.
func TestWebhooksDisabled(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/subscriptions", `{"url":"https://example.com/x"}`}, {"GET", "/v1/subscriptions", ""}, {"DELETE", "/v1/subscriptions/sub_x", ""},
		{"POST", "/v1/subscriptions/sub_x/rotate", ""}, {"GET", "/v1/events/x/attempts", ""}, {"POST", "/v1/events/x/redeliver", ""},
		{"POST", "/v1/subscriptions/sub_x/recover", `{"since":"2026-11-22T10:00:00Z"}`},
	} {
		// A body only where the route takes one: elsewhere it is a 400
		// before the route runs (TestBodyOnRoutesWithoutBody).
		r := e.do(req{method: tc.method, path: tc.path, tenant: "tenant-a", body: tc.body})
		assert.Equal(t, http.StatusNotFound, r.code, "%s %s", tc.method, tc.path)
		assert.Equal(t, "webhooks_disabled", r.errCode(t), "%s %s", tc.method, tc.path)
	}
}

// open opens stored secrets of tenant's subscription id with the env's
// box and returns their plain text.
func (e *env) open(t *testing.T, tenant, id string, stored ...string) []string {
	t.Helper()
	box := e.box(t)
	var out []string
	for _, s := range stored {
		sec, err := box.Open(context.Background(), tenant, id, s)
		require.NoError(t, err, "stored secret %q", s)
		out = append(out, sec.Encode())
	}
	return out
}

func (e *env) box(t *testing.T) *secretbox.Box {
	t.Helper()
	b, ok := e.cfg.Webhooks.Secrets.(*secretbox.Box)
	require.True(t, ok, "the env seals with a *secretbox.Box")
	return b
}

// rawItem returns the subscription's item as DynamoDB stores it, as JSON:
// what the stream, the archive, backups and table readers see.
func (e *env) rawItem(t *testing.T, tenant, id string) string {
	t.Helper()
	out, err := db.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: contract.SubscriptionPrefix + tenant},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: id},
		},
	})
	require.NoError(t, err)
	require.NotEmpty(t, out.Item, "no item for %s/%s", tenant, id)
	var m map[string]any
	require.NoError(t, attributevalue.UnmarshalMap(out.Item, &m))
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// The table holds only sealed secrets: the raw item never contains a
// plain "whsec_" secret, nor the one shown to the client; the shown
// secret is the sealed one, bound to its tenant and subscription.
func TestSubscriptionSecretsAreSealed(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks"}`})
	require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	created := r.json(t)
	id, shown := created["subscription_id"].(string), created["secret"].(string)
	require.True(t, strings.HasPrefix(shown, webhook.SecretPrefix), "the response shows the plain secret once")

	raw := e.rawItem(t, "tenant-a", id)
	assert.NotContains(t, raw, webhook.SecretPrefix, "no plain secret in the stored item: %s", raw)
	assert.NotContains(t, raw, strings.TrimPrefix(shown, webhook.SecretPrefix))
	sub, err := e.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	require.Len(t, sub.Secrets, 1)
	assert.True(t, strings.HasPrefix(sub.Secrets[0], secretbox.Prefix), sub.Secrets[0])
	assert.Equal(t, []string{shown}, e.open(t, "tenant-a", id, sub.Secrets...))
	_, err = e.box(t).Open(context.Background(), "tenant-b", id, sub.Secrets[0])
	assert.ErrorIs(t, err, secretbox.ErrInvalid, "copied to another tenant, it does not open")

	// Rotation: both stored secrets sealed, both sign during the overlap.
	r = e.do(req{method: "POST", path: "/v1/subscriptions/" + id + "/rotate", tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	rotated := r.json(t)["secret"].(string)
	raw = e.rawItem(t, "tenant-a", id)
	assert.NotContains(t, raw, webhook.SecretPrefix, "%s", raw)
	sub, err = e.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	signing := sub.SigningSecrets(time.Now())
	require.Len(t, signing, 2, "the previous secret signs during the overlap")
	assert.Equal(t, []string{rotated, shown}, e.open(t, "tenant-a", id, signing...))

	// Listing never shows a secret, sealed or not.
	r = e.do(req{method: "GET", path: "/v1/subscriptions", tenant: "tenant-a"})
	assert.NotContains(t, string(r.body), secretbox.Prefix)
	assert.NotContains(t, string(r.body), webhook.SecretPrefix)
}

// A subscription whose secret was stored in plain text (before secrets
// were sealed) keeps it until rotated: the first rotation seals the new
// secret and keeps the plain one as the previous (it signs through the
// overlap, also past a second rotation within it, as a retried rotation
// would be); a rotation after the overlap drops it, and no plain secret is
// left.
func TestLegacyPlainSecretIsRotatedOut(t *testing.T) {
	var mu sync.Mutex
	now := time.Now().UTC()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t, withNow(clock), withWebhooks(t, &redeliveries{}))
	id, err := event.NewSubscriptionID(nil)
	require.NoError(t, err)
	legacy := webhook.NewSecret().Encode()
	require.NoError(t, e.store.CreateSubscription(context.Background(), "tenant-a", event.Subscription{
		ID: id, URL: "https://example.com/old", EventTypes: []string{}, CreatedAt: event.FormatTime(clock()), Secrets: []string{legacy},
	}))
	assert.Contains(t, e.rawItem(t, "tenant-a", id), legacy)
	rotate := func() string {
		t.Helper()
		r := e.do(req{method: "POST", path: "/v1/subscriptions/" + id + "/rotate", tenant: "tenant-a"})
		require.Equal(t, http.StatusOK, r.code, "%s", r.body)
		return r.json(t)["secret"].(string)
	}

	first := rotate()
	sub, err := e.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(sub.Secrets[0], secretbox.Prefix))
	assert.Equal(t, legacy, sub.Secrets[1], "the plain secret is now the previous one")
	assert.Equal(t, []string{first, legacy}, e.open(t, "tenant-a", id, sub.SigningSecrets(clock())...), "both sign during the overlap")

	// Rotated again 10 minutes later (say the first answer was lost): the
	// receiver still on the plain secret keeps verifying.
	mu.Lock()
	now = now.Add(10 * time.Minute)
	mu.Unlock()
	second := rotate()
	sub, err = e.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	assert.Equal(t, []string{second, first, legacy}, e.open(t, "tenant-a", id, sub.SigningSecrets(clock())...), "all three sign")

	// After the overlap (an hour here), the next rotation drops it.
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	third := rotate()
	raw := e.rawItem(t, "tenant-a", id)
	assert.NotContains(t, raw, webhook.SecretPrefix, "no plain secret left: %s", raw)
	sub, err = e.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	assert.Equal(t, []string{third, second}, e.open(t, "tenant-a", id, sub.Secrets...))
}

// KMS down: creating a subscription or rotating its secret is a 503 with
// Retry-After, and nothing is written; an unknown subscription is still
// a 404, and bad input still a 400.
func TestSealingUnavailable(t *testing.T) {
	own := kmstest.Start(t)
	box, err := secretbox.New(kmstest.Client(own.Endpoint), own.Key(t), secretbox.Options{})
	require.NoError(t, err)
	e := newEnv(t, func(c *httpapi.Config) {
		withWebhooks(t, &redeliveries{})(c)
		c.Webhooks.Secrets = box
	})
	r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks"}`})
	require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	id := r.json(t)["subscription_id"].(string)
	before := e.rawItem(t, "tenant-a", id)
	items := e.itemCount()

	require.NoError(t, own.Stop())
	r = e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/other"}`})
	assert.Equal(t, http.StatusServiceUnavailable, r.code, "%s", r.body)
	assert.Equal(t, "unavailable", r.errCode(t))
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	assert.Equal(t, items, e.itemCount(), "nothing written")

	r = e.do(req{method: "POST", path: "/v1/subscriptions/" + id + "/rotate", tenant: "tenant-a"})
	assert.Equal(t, http.StatusServiceUnavailable, r.code, "%s", r.body)
	assert.Equal(t, "unavailable", r.errCode(t))
	assert.NotEmpty(t, r.header.Get("Retry-After"))
	assert.Equal(t, before, e.rawItem(t, "tenant-a", id), "the secrets are unchanged")

	r = e.do(req{method: "POST", path: "/v1/subscriptions/sub_AAAAAAAAAAAAAAAAAAAAAAAAAA/rotate", tenant: "tenant-a"})
	assert.Equal(t, http.StatusNotFound, r.code, "an unknown id is not the key service's problem: %s", r.body)
	r = e.do(req{method: "POST", path: "/v1/subscriptions/" + id + "/rotate", tenant: "tenant-b"})
	assert.Equal(t, http.StatusNotFound, r.code, "another tenant's subscription: %s", r.body)
	r = e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"http://example.com/x"}`})
	assert.Equal(t, http.StatusBadRequest, r.code, "bad input is a 400 before any KMS call: %s", r.body)
	assert.Contains(t, e.logs.String(), "key service (KMS) is unavailable", "the cause is logged")
}

// An event's attempts answer stays within Lambda's response limit: past
// the bound the oldest attempts are left out, never a subscription's
// latest, the rest keep their order, and "truncated" says so (found by
// review: hundreds of attempts with long responses answered 502 for good).
func TestAttemptsAnswerStaysWithinTheResponseLimit(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	ev := e.post("tenant-a", "order.paid", `{"n":1}`)
	stored, err := e.store.Get(ctx, "tenant-a", ev.ID)
	require.NoError(t, err)
	at := time.Now()
	response := strings.Repeat("\x01", 1000) // 7 bytes each in the Lambda response
	for _, sub := range []string{"sub_a", "sub_b"} {
		for n := 1; n <= 4; n++ {
			_, claimed, err := e.store.ClaimAttempt(ctx, "tenant-a", ev.ID, event.AttemptClaim{SubscriptionID: sub, Number: n, Owner: "o", At: at, LeaseUntil: at.Add(time.Minute)}, stored.TTL)
			require.NoError(t, err)
			require.True(t, claimed)
			require.NoError(t, e.store.FinishAttempt(ctx, "tenant-a", ev.ID, event.Attempt{SubscriptionID: sub, Number: n, Timestamp: ev.Timestamp, Outcome: "failed", StatusCode: 500, Response: response}, "o"))
		}
	}
	get := func() (map[string]any, []string) {
		r := e.do(req{method: "GET", path: "/v1/events/" + ev.ID + "/attempts", tenant: "tenant-a"})
		require.Equal(t, http.StatusOK, r.code, "%.300s", r.body)
		body := r.json(t)
		var got []string
		for _, a := range body["attempts"].([]any) {
			m := a.(map[string]any)
			got = append(got, fmt.Sprintf("%s#%v", m["subscription_id"], m["attempt"]))
		}
		return body, got
	}
	body, got := get()
	assert.NotContains(t, body, "truncated", "everything fits")
	assert.Equal(t, []string{"sub_a#1", "sub_a#2", "sub_a#3", "sub_a#4", "sub_b#1", "sub_b#2", "sub_b#3", "sub_b#4"}, got)

	one := event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: ev.Timestamp, Outcome: "failed", Response: response}.WireSize()
	httpapi.SetAttemptsBudget(t, 5*one)
	body, got = get()
	assert.Equal(t, true, body["truncated"])
	assert.Equal(t, []string{"sub_a#3", "sub_a#4", "sub_b#2", "sub_b#3", "sub_b#4"}, got, "the lowest numbers left out first (sub_a#1, sub_b#1, sub_a#2)")
	httpapi.SetAttemptsBudget(t, 1)
	body, got = get()
	assert.Equal(t, true, body["truncated"])
	assert.Equal(t, []string{"sub_a#4", "sub_b#4"}, got, "each subscription's latest always")
}
