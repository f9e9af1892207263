package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

// moveTo brings a new event to status via valid transitions.
func (e *env) moveTo(tenant, id string, st event.Status) {
	e.t.Helper()
	path := map[event.Status][]string{
		event.Received:  nil,
		event.Delivered: {"delivered"},
		event.Failed:    {"failed"},
		event.Retrying:  {"failed", "retrying"},
	}[st]
	for _, to := range path {
		r := e.do(req{method: "PATCH", path: "/v1/events/" + id, tenant: tenant, body: `{"status":"` + to + `"}`})
		require.Equal(e.t, http.StatusOK, r.code, "PATCH to %s = %d %s", to, r.code, r.body)
	}
}

func TestEveryStatusTransition(t *testing.T) {
	e := newEnv(t)
	for _, from := range event.Statuses {
		for _, to := range event.Statuses {
			valid := event.CanTransition(from, to)
			t.Run(fmt.Sprintf("%s->%s", from, to), func(t *testing.T) {
				e := e.with(t)
				ev := e.post("tenant-a", "t", `{}`)
				e.moveTo("tenant-a", ev.ID, from)
				before, err := e.store.Get(context.Background(), "tenant-a", ev.ID)
				require.NoError(t, err)
				r := e.do(req{method: "PATCH", path: "/v1/events/" + ev.ID, tenant: "tenant-a", body: `{"status":"` + string(to) + `"}`})
				after, err := e.store.Get(context.Background(), "tenant-a", ev.ID)
				require.NoError(t, err)
				if !valid {
					assert.Equal(t, http.StatusConflict, r.code, "PATCH %s->%s = %d %s, want 409", from, to, r.code, r.body)
					assert.Equal(t, "invalid_transition", r.errCode(t))
					assert.Equal(t, before, after, "a rejected transition changed the event")
					return
				}
				require.Equal(t, http.StatusOK, r.code, "PATCH %s->%s = %d %s, want 200", from, to, r.code, r.body)
				got := r.event(t)
				assert.Equal(t, to, got.Status)
				assert.Equal(t, after.Status, to)
				wantRetries := before.RetryCount
				if to == event.Retrying {
					wantRetries++
				}
				assert.Equal(t, wantRetries, got.RetryCount, "retry_count after %s->%s", from, to)
				// status#timestamp follows status: the event is in its new
				// status's inbox only.
				for _, st := range event.Statuses {
					found := contains(e.all("tenant-a", "status="+string(st)+"&limit=100"), ev.ID)
					assert.Equal(t, st == to, found, "event in status=%s inbox after %s->%s", st, from, to)
				}
			})
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRetryCountAccumulates(t *testing.T) {
	e := newEnv(t)
	ev := e.post("tenant-a", "t", `{}`)
	for _, to := range []string{"failed", "retrying", "failed", "retrying", "failed", "retrying", "delivered"} {
		r := e.do(req{method: "PATCH", path: "/v1/events/" + ev.ID, tenant: "tenant-a", body: `{"status":"` + to + `"}`})
		require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	}
	got, err := e.store.Get(context.Background(), "tenant-a", ev.ID)
	require.NoError(t, err)
	assert.Equal(t, 3, got.RetryCount)
	assert.Equal(t, event.Delivered, got.Status)
}

func TestConcurrentStatusUpdates(t *testing.T) {
	e := newEnv(t)
	for round := 0; round < 5; round++ {
		ev := e.post("tenant-a", "t", `{}`)
		targets := []string{"delivered", "failed"}
		codes := make([]int, len(targets))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, to := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				codes[i] = e.serve(req{method: "PATCH", path: "/v1/events/" + ev.ID, tenant: "tenant-a", body: `{"status":"` + to + `"}`}).code
			}()
		}
		close(start)
		wg.Wait()
		got, err := e.store.Get(context.Background(), "tenant-a", ev.ID)
		require.NoError(t, err)
		ok := 0
		for i, c := range codes {
			require.Contains(t, []int{200, 409}, c, "PATCH to %s", targets[i])
			if c == 200 {
				ok++
				assert.Equal(t, event.Status(targets[i]), got.Status, "the winner's status is stored")
			}
		}
		assert.Equal(t, 1, ok, "concurrent received->delivered and received->failed: %v, want exactly one 200", codes)
	}

	// Two concurrent failed->retrying: one wins, retry_count is 1.
	ev := e.post("tenant-a", "t", `{}`)
	e.moveTo("tenant-a", ev.ID, event.Failed)
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = e.serve(req{method: "PATCH", path: "/v1/events/" + ev.ID, tenant: "tenant-a", body: `{"status":"retrying"}`}).code
		}()
	}
	wg.Wait()
	assert.ElementsMatch(t, []int{200, 409}, codes)
	got, err := e.store.Get(context.Background(), "tenant-a", ev.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, got.RetryCount)
}

func TestPatchAndGetErrors(t *testing.T) {
	e := newEnv(t)
	ev := e.post("tenant-a", "t", `{}`)
	unknown, _, err := event.NewID(mustTime(ev.Timestamp), nil)
	require.NoError(t, err)
	tests := []struct {
		name string
		r    req
		code int
		err  string
	}{
		{"get unknown id", req{method: "GET", path: "/v1/events/" + unknown}, 404, "not_found"},
		{"get malformed id", req{method: "GET", path: "/v1/events/not-an-id"}, 404, "not_found"},
		{"get uppercase id", req{method: "GET", path: "/v1/events/" + strings.ToUpper(ev.ID)}, 404, "not_found"},
		{"get uuid v4", req{method: "GET", path: "/v1/events/550e8400-e29b-41d4-a716-446655440000"}, 404, "not_found"},
		{"patch unknown id", req{method: "PATCH", path: "/v1/events/" + unknown, body: `{"status":"delivered"}`}, 404, "not_found"},
		{"patch malformed id", req{method: "PATCH", path: "/v1/events/x", body: `{"status":"delivered"}`}, 404, "not_found"},
		{"patch unknown id to received", req{method: "PATCH", path: "/v1/events/" + unknown, body: `{"status":"received"}`}, 404, "not_found"},
		{"patch unknown status", req{method: "PATCH", path: "/v1/events/" + ev.ID, body: `{"status":"done"}`}, 400, "invalid_status"},
		{"patch missing status", req{method: "PATCH", path: "/v1/events/" + ev.ID, body: `{}`}, 400, "invalid_status"},
		{"patch extra field", req{method: "PATCH", path: "/v1/events/" + ev.ID, body: `{"status":"failed","retry_count":9}`}, 400, "invalid_json"},
		{"patch malformed", req{method: "PATCH", path: "/v1/events/" + ev.ID, body: `{"status":`}, 400, "invalid_json"},
		{"patch wrong content type", req{method: "PATCH", path: "/v1/events/" + ev.ID, body: `{"status":"failed"}`, headers: map[string]string{"Content-Type": "application/xml"}}, 415, "unsupported_media_type"},
		{"unknown path", req{method: "GET", path: "/v1/nothing"}, 404, "not_found"},
		{"nested path", req{method: "GET", path: "/v1/events/" + ev.ID + "/x"}, 404, "not_found"},
		{"wrong method events", req{method: "GET", path: "/v1/events"}, 405, "method_not_allowed"},
		{"wrong method event", req{method: "DELETE", path: "/v1/events/" + ev.ID}, 405, "method_not_allowed"},
		{"wrong method inbox", req{method: "POST", path: "/v1/inbox", body: `{}`}, 405, "method_not_allowed"},
		{"wrong method ack", req{method: "GET", path: "/v1/inbox/ack"}, 405, "method_not_allowed"},
		{"wrong method batch", req{method: "PUT", path: "/v1/events/batch", body: `{}`}, 405, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.with(t)
			tt.r.tenant = "tenant-a"
			r := e.do(tt.r)
			assert.Equal(t, tt.code, r.code, "%s %s = %d %s, want %d", tt.r.method, tt.r.path, r.code, r.body, tt.code)
			assert.Equal(t, tt.err, r.errCode(t))
			if tt.code == 405 {
				allow := map[string]string{"/v1/events": "POST", "/v1/events/" + ev.ID: "GET, PATCH", "/v1/inbox": "GET", "/v1/inbox/ack": "POST", "/v1/events/batch": "POST"}[tt.r.path]
				assert.Equal(t, allow, r.header.Get("Allow"), "%s %s: Allow", tt.r.method, tt.r.path)
			} else {
				assert.Empty(t, r.header.Get("Allow"), "%s %s: Allow on a %d", tt.r.method, tt.r.path, r.code)
			}
		})
	}
	got := e.do(req{method: "GET", path: "/v1/events/" + ev.ID, tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, got.code)
	assert.Equal(t, event.Received, got.event(t).Status, "failed requests changed the event")
}

func TestAck(t *testing.T) {
	e := newEnv(t)
	evs := seedInbox(t, e, "tenant-a", 5)
	e.moveTo("tenant-a", evs[1].ID, event.Delivered)
	e.moveTo("tenant-a", evs[2].ID, event.Failed)
	unknown, _, err := event.NewID(mustTime(evs[0].Timestamp), nil)
	require.NoError(t, err)
	body := fmt.Sprintf(`{"event_ids":[%q,%q,%q,%q,%q,%q,%q]}`, evs[0].ID, evs[1].ID, evs[2].ID, unknown, "garbage", evs[3].ID, evs[0].ID)
	r := e.do(req{method: "POST", path: "/v1/inbox/ack", tenant: "tenant-a", body: body})
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	var got struct {
		Delivered        []string `json:"delivered"`
		AlreadyDelivered []string `json:"already_delivered"`
		Unknown          []string `json:"unknown"`
		Conflicts        []struct {
			EventID string `json:"event_id"`
			Status  string `json:"status"`
		} `json:"conflicts"`
	}
	require.NoError(t, jsonUnmarshal(r.body, &got))
	assert.Equal(t, []string{evs[0].ID, evs[3].ID}, got.Delivered)
	assert.Equal(t, []string{evs[1].ID}, got.AlreadyDelivered)
	assert.Equal(t, []string{unknown, "garbage"}, got.Unknown)
	require.Len(t, got.Conflicts, 1)
	assert.Equal(t, evs[2].ID, got.Conflicts[0].EventID)
	assert.Equal(t, "failed", got.Conflicts[0].Status)
	assert.Equal(t, []string{evs[4].ID}, e.all("tenant-a", "limit=100"), "received inbox after ack")

	// Idempotent: acking again reports them as already delivered.
	r = e.do(req{method: "POST", path: "/v1/inbox/ack", tenant: "tenant-a", body: fmt.Sprintf(`{"event_ids":[%q]}`, evs[0].ID)})
	require.Equal(t, http.StatusOK, r.code)
	assert.JSONEq(t, fmt.Sprintf(`{"delivered":[],"already_delivered":[%q],"unknown":[],"conflicts":[]}`, evs[0].ID), string(r.body))

	many := make([]string, event.MaxAck+1)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprint(i))
	}
	for name, body := range map[string]string{
		"101 ids":   `{"event_ids":[` + strings.Join(many, ",") + `]}`,
		"no ids":    `{"event_ids":[]}`,
		"missing":   `{}`,
		"not array": `{"event_ids":"x"}`,
		"numbers":   `{"event_ids":[1]}`,
	} {
		r := e.do(req{method: "POST", path: "/v1/inbox/ack", tenant: "tenant-a", body: body})
		assert.Equal(t, http.StatusBadRequest, r.code, "ack %s = %d %s", name, r.code, r.body)
	}
	r = e.do(req{method: "POST", path: "/v1/inbox/ack", tenant: "tenant-a", body: `{"event_ids":["` + strings.Repeat("x", 10) + `"]}`})
	assert.Equal(t, http.StatusOK, r.code)
	// 100 ids is the maximum and works.
	hundred := make([]string, event.MaxAck)
	for i := range hundred {
		hundred[i] = fmt.Sprintf("%q", fmt.Sprint("id-", i))
	}
	r = e.do(req{method: "POST", path: "/v1/inbox/ack", tenant: "tenant-a", body: `{"event_ids":[` + strings.Join(hundred, ",") + `]}`})
	assert.Equal(t, http.StatusOK, r.code, "%s", r.body)
}
