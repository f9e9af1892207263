package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

func TestNewRefusesIncompleteWebhooks(t *testing.T) {
	_, err := httpapi.New(httpapi.Config{Store: store.New(db.Client, "t"), CursorSecret: testSecret, Webhooks: &httpapi.Webhooks{}})
	require.EqualError(t, err, "httpapi: Config.Webhooks needs Store, Redeliver, Recover and Secrets")
}

// The event's source IP is the edge's (WithSourceIP), else the peer
// address without its port, else the peer address as it is.
func TestSourceIP(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		edge, remote, want string
	}{
		{"198.51.100.4", "192.0.2.1:1234", "198.51.100.4"},
		{"", "192.0.2.1:1234", "192.0.2.1"},
		{"", "[2001:db8::1]:443", "2001:db8::1"},
		{"", "203.0.113.9", "203.0.113.9"},
	} {
		r := httptest.NewRequest("POST", "/v1/events", strings.NewReader(`{"event_type":"t","payload":{}}`))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = c.remote
		ctx := httpapi.WithTenant(r.Context(), "tenant-a")
		if c.edge != "" {
			ctx = httpapi.WithSourceIP(ctx, c.edge)
		}
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, r.WithContext(ctx))
		require.Equal(t, http.StatusCreated, rec.Code, "%s", rec.Body)
		var got struct {
			Metadata struct {
				SourceIP string `json:"source_ip"`
			} `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		assert.Equal(t, c.want, got.Metadata.SourceIP, "edge %q remote %q", c.edge, c.remote)
	}
}

// A body that cannot be read (the connection broke mid-body) is a 400
// naming it, and nothing is stored.
func TestUnreadableBodyIs400(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/v1/events", "/v1/events/batch"} {
		r := httptest.NewRequest("POST", path, iotest.ErrReader(context.DeadlineExceeded))
		r.Header.Set("Content-Type", "application/json")
		r = r.WithContext(httpapi.WithTenant(r.Context(), "tenant-a"))
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, r)
		got := resp{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
		assert.Equal(t, http.StatusBadRequest, got.code, "%s", got.body)
		assert.Equal(t, "invalid_body", got.errCode(t))
		assert.Contains(t, string(got.body), "the body could not be read")
	}
	assert.Equal(t, 0, e.count("tenant-a"))
}

// A malformed subscription id is simply not found, on every route.
func TestMalformedSubscriptionIDIsNotFound(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	for _, r := range []req{
		{method: "DELETE", path: "/v1/subscriptions/nope"},
		{method: "POST", path: "/v1/subscriptions/nope/rotate"},
	} {
		r.tenant = "tenant-a"
		got := e.do(r)
		assert.Equal(t, http.StatusNotFound, got.code, "%s %s: %s", r.method, r.path, got.body)
		assert.Equal(t, "not_found", got.errCode(t))
	}
}

// rotateRacer lets another rotation of the same subscription land
// between the store's read and its conditional write.
type rotateRacer struct {
	store.API
	other  *store.Store
	tenant string
	raced  bool
}

func (r *rotateRacer) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !r.raced {
		r.raced = true
		subs, err := r.other.ListSubscriptions(ctx, r.tenant)
		if err != nil {
			return nil, err
		}
		if _, err := r.other.RotateSecret(ctx, r.tenant, subs[0].ID, "whsec_winner", time.Now(), time.Now().Add(time.Hour)); err != nil {
			return nil, err
		}
	}
	return r.API.UpdateItem(ctx, in, optFns...)
}

// Two rotations at once: the loser is a 409 conflict that says what to
// do, and the winner's secret stands.
func TestConcurrentRotationIs409(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	seed := newEnvOn(t, table, db.Client, withWebhooks(t, &redeliveries{}))
	r := seed.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks"}`})
	require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	id := r.json(t)["subscription_id"].(string)

	racer := &rotateRacer{API: db.Client, other: seed.store, tenant: "tenant-a"}
	e := newEnvOn(t, table, racer, withWebhooks(t, &redeliveries{}))
	got := e.do(req{method: "POST", path: "/v1/subscriptions/" + id + "/rotate", tenant: "tenant-a"})
	assert.Equal(t, http.StatusConflict, got.code, "%s", got.body)
	assert.Equal(t, "conflict", got.errCode(t))
	assert.Contains(t, string(got.body), "the secret was rotated concurrently by another request; list the subscription and rotate again if needed")
	sub, err := seed.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	assert.Equal(t, "whsec_winner", sub.Secrets[0])
}

// A 500 (here: the table does not exist, a configuration error) is
// logged at ERROR with its code; a client error at WARN.
func TestLogLevelByStatus(t *testing.T) {
	e := newEnvOn(t, "no-such-table", db.Client)
	got := e.do(req{method: "GET", path: "/v1/inbox", tenant: "tenant-a"})
	require.Equal(t, http.StatusInternalServerError, got.code, "%s", got.body)
	got = e.do(req{method: "GET", path: "/v1/inbox?limit=0", tenant: "tenant-a"})
	require.Equal(t, http.StatusBadRequest, got.code, "%s", got.body)
	lines := strings.Split(strings.TrimSpace(e.logs.String()), "\n")
	require.Len(t, lines, 2, "%s", e.logs.String())
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	assert.Equal(t, "ERROR", first["level"], "%v", first)
	assert.Equal(t, float64(500), first["status"])
	assert.Equal(t, "WARN", second["level"], "%v", second)
}

// An unknown path is quoted in the 404 up to 100 bytes, then cut.
func TestUnknownPathQuotedUpTo100Bytes(t *testing.T) {
	e := newEnv(t)
	exact := "/" + strings.Repeat("p", 99)
	got := e.do(req{method: "GET", path: exact, tenant: "tenant-a"})
	require.Equal(t, http.StatusNotFound, got.code)
	assert.Contains(t, string(got.body), `"no such resource: `+exact+`"`)
	got = e.do(req{method: "GET", path: exact + "q", tenant: "tenant-a"})
	require.Equal(t, http.StatusNotFound, got.code)
	assert.Contains(t, string(got.body), `"no such resource: `+exact+`..."`)
}

// A batch logs "batch items not stored" once, with the first entry that
// failed on the server's side (5xx, 500 included).
func TestBatchServerFailuresAreLogged(t *testing.T) {
	e := newEnvOn(t, "no-such-table", db.Client)
	got := e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-a", body: `{"events":[{"event_type":"t","payload":{}},{"event_type":"t","payload":{}}]}`})
	require.Equal(t, http.StatusMultiStatus, got.code)
	assert.Equal(t, 2, strings.Count(string(got.body), `"status":500`), "%s", got.body)
	assert.Equal(t, 1, strings.Count(e.logs.String(), `"msg":"batch items not stored"`), "%s", e.logs.String())

}

// Without a RotationOverlap the previous secret signs for 24 hours.
func TestDefaultRotationOverlap(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, withNow(func() time.Time { return now }), func(c *httpapi.Config) {
		withWebhooks(t, &redeliveries{})(c)
		c.Webhooks.RotationOverlap = 0
	})
	r := e.do(req{method: "POST", path: "/v1/subscriptions", tenant: "tenant-a", body: `{"url":"https://example.com/hooks"}`})
	require.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	id := r.json(t)["subscription_id"].(string)
	r = e.do(req{method: "POST", path: "/v1/subscriptions/" + id + "/rotate", tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	sub, err := e.store.GetSubscription(context.Background(), "tenant-a", id)
	require.NoError(t, err)
	require.Len(t, sub.PreviousExpires, 1)
	assert.True(t, now.Add(24*time.Hour).Equal(sub.PreviousExpires[0]), "previous secret expires %v", sub.PreviousExpires)
}

// A redelivery the queue refuses is a 503 whose log line says why, and
// nothing was written. One whose queued round cannot be confirmed (the
// store is down after queueing) is a 503 that says the round may start.
func TestRedeliverFailureIsLogged(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	seed := newEnvOn(t, table, db.Client)
	ev := seed.post("tenant-a", "t", `{}`)
	_, err := seed.store.Transition(context.Background(), "tenant-a", ev.ID, []event.Status{event.Received}, event.Failed)
	require.NoError(t, err)

	var writes atomic.Int32
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		if op == "TransactWriteItems" || op == "UpdateItem" || op == "PutItem" {
			writes.Add(1)
			return ddbtest.AWSError("ProvisionedThroughputExceededException", "the store is throttled")
		}
		return nil
	})
	e := newEnvOn(t, table, client, withWebhooks(t, &redeliveries{fail: errors.New("queue down")}))
	got := e.do(req{method: "POST", path: "/v1/events/" + ev.ID + "/redeliver", tenant: "tenant-a"})
	assert.Equal(t, http.StatusServiceUnavailable, got.code, "%s", got.body)
	assert.Equal(t, "unavailable", got.errCode(t))
	assert.Contains(t, string(got.body), "nothing changed")
	assert.Contains(t, e.logs.String(), "queue down")
	assert.Zero(t, writes.Load(), "nothing is written when the queue refuses")

	rd := &redeliveries{}
	e = newEnvOn(t, table, client, withWebhooks(t, rd))
	got = e.do(req{method: "POST", path: "/v1/events/" + ev.ID + "/redeliver", tenant: "tenant-a"})
	assert.Equal(t, http.StatusServiceUnavailable, got.code, "%s", got.body)
	assert.NotEmpty(t, got.header.Get("Retry-After"))
	assert.Contains(t, string(got.body), "the redelivery is queued")
	assert.Contains(t, e.logs.String(), "the store is throttled")
	assert.Len(t, rd.calls, 1, "the round is queued: its task starts it")
}
