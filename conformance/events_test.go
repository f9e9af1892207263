package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// 20 concurrent requests with one Idempotency-Key store one event: one 201,
// the others 200 with the same event.
func TestIdempotencyUnderConcurrentDuplicates(t *testing.T) {
	tg := api(t)
	tg.writes(t)
	typ, idem := unique("idempotency"), unique("key")
	body := []byte(`{"event_type":"` + typ + `","payload":{"order":42,"amount":"19.99"}}`)
	const n = 20
	results := make([]response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = tg.do(t, "POST", "/v1/events", jsonBearer(tg.key, "Idempotency-Key", idem), body)
		}()
	}
	close(start)
	wg.Wait()
	created, repeated := 0, 0
	seen := map[string]bool{}
	for _, r := range results {
		switch r.Status {
		case http.StatusCreated:
			created++
		case http.StatusOK:
			repeated++
		default:
			t.Errorf("duplicate: %s, want 201 or 200", r)
			continue
		}
		seen[decodeEvent(t, r).ID] = true
	}
	assert.Equal(t, 1, created, "exactly one 201")
	assert.Equal(t, n-1, repeated, "the others 200")
	require.Len(t, seen, 1, "one event id for all: %v", seen)
	eventually(t, "one stored event", func() (bool, string) {
		got := ids(tg.all(t, tg.key, "status=all&event_type="+typ, 100))
		return len(got) == 1 && seen[got[0]], "inbox: " + join(got)
	})
	// The same key with another request is refused, not stored.
	r := tg.do(t, "POST", "/v1/events", jsonBearer(tg.key, "Idempotency-Key", idem), []byte(`{"event_type":"`+typ+`","payload":{"order":43}}`))
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r)
	assert.Equal(t, "idempotency_key_reused", r.ErrorCode())
}

// sortKey orders events as the inbox does: by timestamp, then id.
func sortKey(e event) string { return e.Timestamp + "#" + e.ID }

// Paging the inbox while other clients write loses nothing and repeats
// nothing; pages are in order, newest first (or oldest first with asc).
func TestInboxPagingUnderConcurrentWriters(t *testing.T) {
	tg := api(t)
	tg.writes(t)
	typ := unique("paging")
	const writers, each = 4, 8
	var mu sync.Mutex
	posted := map[string]bool{}
	write := func() {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					// assert, not require: not the test's goroutine.
					r := tg.do(t, "POST", "/v1/events", jsonBearer(tg.key), []byte(fmt.Sprintf(`{"event_type":%q,"payload":{"writer":%d,"i":%d}}`, typ, w, i)))
					var e event
					if !assert.Equal(t, http.StatusCreated, r.Status, "%s", r) || !assert.NoError(t, json.Unmarshal(r.Body, &e)) {
						return
					}
					mu.Lock()
					posted[e.ID] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	write()
	before := map[string]bool{}
	for id := range posted {
		before[id] = true
	}
	eventually(t, "the first writes are all listed", func() (bool, string) {
		n := len(tg.all(t, tg.key, "event_type="+typ, 100))
		return n == len(before), fmt.Sprintf("%d of %d", n, len(before))
	})

	// Page newest first, limit 5, while the writers add as many again.
	done := make(chan struct{})
	go func() { defer close(done); write() }()
	paged := tg.all(t, tg.key, "event_type="+typ, 5)
	<-done
	seen := map[string]bool{}
	for i, e := range paged {
		assert.False(t, seen[e.ID], "event %s served twice", e.ID)
		seen[e.ID] = true
		assert.Equal(t, typ, e.Type)
		if i > 0 {
			assert.Greater(t, sortKey(paged[i-1]), sortKey(e), "newest first: %d before %d", i-1, i)
		}
	}
	for id := range before {
		assert.True(t, seen[id], "event %s, written before paging, was lost", id)
	}
	for id := range seen {
		assert.True(t, posted[id], "event %s was never posted", id)
	}

	// Afterwards, every event once, oldest first, through small pages.
	want := make([]string, 0, len(posted))
	for id := range posted {
		want = append(want, id)
	}
	sort.Strings(want)
	require.Len(t, want, 2*writers*each)
	eventually(t, "every event listed once, oldest first", func() (bool, string) {
		asc := tg.all(t, tg.key, "event_type="+typ+"&order=asc", 7)
		for i := 1; i < len(asc); i++ {
			if sortKey(asc[i-1]) >= sortKey(asc[i]) {
				return false, fmt.Sprintf("out of order at %d", i)
			}
		}
		got := ids(asc)
		sort.Strings(got)
		return slices.Equal(got, want), fmt.Sprintf("%d listed, want %d", len(got), len(want))
	})
}

// Ack marks received events delivered, reports the others, and is
// idempotent; the inbox then leaves them out.
func TestAck(t *testing.T) {
	tg := api(t)
	tg.writes(t)
	typ := unique("ack")
	e1, e2, e3 := tg.post(t, tg.key, typ, `{"i":1}`), tg.post(t, tg.key, typ, `{"i":2}`), tg.post(t, tg.key, typ, `{"i":3}`)
	r := tg.do(t, "PATCH", "/v1/events/"+e3.ID, jsonBearer(tg.key), []byte(`{"status":"failed"}`))
	require.Equal(t, http.StatusOK, r.Status, "%s", r)
	unknown := "01a2054b-f8ba-7375-9175-000000000000"

	ack := func(ids ...string) map[string]any {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"event_ids": ids})
		r := tg.do(t, "POST", "/v1/inbox/ack", jsonBearer(tg.key), b)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		return r.JSON(t)
	}
	got := ack(e1.ID, e2.ID, e1.ID, unknown, e3.ID)
	assert.ElementsMatch(t, []any{e1.ID, e2.ID}, got["delivered"], "%v", got)
	assert.Equal(t, []any{unknown}, got["unknown"], "%v", got)
	assert.Empty(t, got["already_delivered"], "%v", got)
	conflicts, _ := json.Marshal(got["conflicts"])
	assert.Contains(t, string(conflicts), e3.ID, "a failed event is a conflict: %v", got)
	assert.Contains(t, string(conflicts), "failed")

	got = ack(e1.ID, e2.ID)
	assert.Empty(t, got["delivered"], "again: %v", got)
	assert.ElementsMatch(t, []any{e1.ID, e2.ID}, got["already_delivered"], "again: %v", got)

	for _, e := range []event{e1, e2} {
		r := tg.do(t, "GET", "/v1/events/"+e.ID, bearer(tg.key), nil)
		assert.Equal(t, "delivered", decodeEvent(t, r).Status)
	}
	eventually(t, "the inbox leaves acked and failed events out", func() (bool, string) {
		got := ids(tg.all(t, tg.key, "event_type="+typ, 100))
		return len(got) == 0, join(got)
	})
	eventually(t, "status=delivered lists the acked events", func() (bool, string) {
		got := ids(tg.all(t, tg.key, "event_type="+typ+"&status=delivered", 100))
		sort.Strings(got)
		want := []string{e1.ID, e2.ID}
		sort.Strings(want)
		return slices.Equal(got, want), join(got)
	})
}

// PATCH follows the state machine: received -> delivered | failed;
// failed -> retrying (retry_count + 1); retrying -> delivered | failed.
// Anything else, the same status included, is 409.
func TestStatusMachine(t *testing.T) {
	tg := api(t)
	tg.writes(t)
	typ := unique("status")
	patch := func(e event, status string) response {
		t.Helper()
		return tg.do(t, "PATCH", "/v1/events/"+e.ID, jsonBearer(tg.key), []byte(`{"status":"`+status+`"}`))
	}
	// Paths through the machine, each step's outcome and retry_count.
	for _, path := range []string{
		"delivered",
		"failed retrying delivered",
		"failed retrying failed retrying failed",
	} {
		e := tg.post(t, tg.key, typ, `{}`)
		retries := 0
		for _, s := range strings.Fields(path) {
			r := patch(e, s)
			require.Equal(t, http.StatusOK, r.Status, "%s: to %s: %s", path, s, r)
			if s == "retrying" {
				retries++
			}
			got := decodeEvent(t, r)
			assert.Equal(t, s, got.Status, path)
			assert.Equal(t, retries, got.RetryCount, "%s: retry_count after %s", path, s)
		}
		r := tg.do(t, "GET", "/v1/events/"+e.ID, bearer(tg.key), nil)
		got := decodeEvent(t, r)
		assert.Equal(t, retries, got.RetryCount, "%s: read back", path)
	}
	// Refused transitions from each status.
	refused := map[string][]string{
		"received":  {"received", "retrying"},
		"delivered": {"delivered", "received", "failed", "retrying"},
		"failed":    {"failed", "received", "delivered"},
		"retrying":  {"retrying", "received"},
	}
	reach := map[string][]string{"received": nil, "delivered": {"delivered"}, "failed": {"failed"}, "retrying": {"failed", "retrying"}}
	for from, tos := range refused {
		e := tg.post(t, tg.key, typ, `{}`)
		for _, s := range reach[from] {
			require.Equal(t, http.StatusOK, patch(e, s).Status)
		}
		for _, to := range tos {
			r := patch(e, to)
			assert.Equal(t, http.StatusConflict, r.Status, "%s -> %s: %s", from, to, r)
			assert.Equal(t, "invalid_transition", r.ErrorCode(), "%s -> %s", from, to)
		}
		r := tg.do(t, "GET", "/v1/events/"+e.ID, bearer(tg.key), nil)
		assert.Equal(t, from, decodeEvent(t, r).Status, "refused changes left %s alone", from)
	}
	// Concurrent changes from one status: one wins, the other is 409.
	e := tg.post(t, tg.key, typ, `{}`)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, s := range []string{"delivered", "failed"} {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i] = patch(e, s).Status }()
	}
	wg.Wait()
	assert.ElementsMatch(t, []int{http.StatusOK, http.StatusConflict}, codes, "two changes from received")
}

// A batch stores its valid entries and reports each entry's outcome, in
// order.
func TestBatchPartialResults(t *testing.T) {
	tg := api(t)
	tg.writes(t)
	typ := unique("batch")
	body := `{"events":[` +
		`{"event_type":"` + typ + `","payload":{"i":0}},` +
		`{"event_type":"bad#type","payload":{}},` +
		`{"event_type":"` + typ + `","payload":[]},` +
		`{"event_type":"` + typ + `","payload":{"n":1e400}},` +
		`{"event_type":"` + typ + `","payload":{"i":4,"big":123456789012345678901234567890}}]}`
	r := tg.do(t, "POST", "/v1/events/batch", jsonBearer(tg.key), []byte(body))
	require.Equal(t, http.StatusMultiStatus, r.Status, "%s", r)
	var out struct {
		Results []struct {
			Index  int             `json:"index"`
			Status int             `json:"status"`
			Event  *event          `json:"event"`
			Error  json.RawMessage `json:"error"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &out), "%s", r)
	require.Len(t, out.Results, 5, "%s", r)
	want := []int{201, 400, 400, 400, 201}
	var stored []string
	for i, res := range out.Results {
		assert.Equal(t, i, res.Index)
		assert.Equal(t, want[i], res.Status, "entry %d: %s", i, r)
		if res.Status == 201 {
			require.NotNil(t, res.Event, "entry %d", i)
			stored = append(stored, res.Event.ID)
		} else {
			assert.Contains(t, string(res.Error), `"code":"invalid_`, "entry %d", i)
		}
	}
	for _, id := range stored {
		r := tg.do(t, "GET", "/v1/events/"+id, bearer(tg.key), nil)
		assert.Equal(t, http.StatusOK, r.Status, "stored entry %s: %s", id, r)
	}
	r = tg.do(t, "GET", "/v1/events/"+stored[1], bearer(tg.key), nil)
	assert.Contains(t, string(r.Body), `"big":123456789012345678901234567890`, "numbers keep their digits")
	eventually(t, "only the valid entries are stored", func() (bool, string) {
		got := ids(tg.all(t, tg.key, "status=all&event_type="+typ, 100))
		sort.Strings(got)
		s := append([]string(nil), stored...)
		sort.Strings(s)
		return slices.Equal(got, s), join(got)
	})
}

// Every answer has a request id (errors name it); a client's
// X-Correlation-Id is echoed and stored with the event.
func TestRequestAndCorrelationIDs(t *testing.T) {
	tg := api(t)
	seen := map[string]bool{}
	for range 3 {
		r := tg.do(t, "GET", "/v1/inbox?limit=1", bearer(tg.key, "X-Correlation-Id", "conformance-read"), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r)
		id := r.Header.Get("X-Request-Id")
		assert.NotEmpty(t, id, "X-Request-Id")
		assert.False(t, seen[id], "request id %s repeated", id)
		seen[id] = true
		assert.Equal(t, "conformance-read", r.Header.Get("X-Correlation-Id"), "echoed")
	}
	r := tg.do(t, "GET", "/v1/events/nope", bearer(tg.key), nil)
	assert.NotEmpty(t, r.Header.Get("X-Request-Id"), "function errors carry X-Request-Id: %s", r)
	// Two correlation ids are refused: the gateway's own answers would
	// echo one, the function another.
	r = tg.do(t, "GET", "/v1/inbox?limit=1", bearer(tg.key, "X-Correlation-Id", "corr-a", "X-Correlation-Id", "corr-b"), nil)
	assert.Equal(t, http.StatusBadRequest, r.Status, "two X-Correlation-Id: %s", r)
	assert.Equal(t, "invalid_header", r.ErrorCode(), "two X-Correlation-Id: %s", r)
	// An empty one is refused, not taken for none (a client's unset
	// variable). Locally the gateway passes it on as API Gateway passes a
	// header; a stage that dropped it before the function would answer
	// 200, which the suite reports without failing.
	r = tg.do(t, "GET", "/v1/inbox?limit=1", bearer(tg.key, "X-Correlation-Id", ""), nil)
	if !tg.local && r.Status == http.StatusOK {
		t.Logf("the stage dropped an empty X-Correlation-Id before the function: %s", r)
	} else {
		assert.Equal(t, http.StatusBadRequest, r.Status, "empty X-Correlation-Id: %s", r)
		assert.Equal(t, "invalid_header", r.ErrorCode(), "empty X-Correlation-Id: %s", r)
		assert.Contains(t, r.String(), "X-Correlation-Id is empty", "empty X-Correlation-Id")
	}
	if tg.readOnly {
		return
	}
	e := tg.post(t, tg.key, unique("correlation"), `{}`, "X-Correlation-Id", "conformance-corr-1")
	assert.Equal(t, "conformance-corr-1", e.Metadata["correlation_id"])
	assert.Equal(t, "v1", e.Metadata["api_version"])
	assert.NotEmpty(t, e.Metadata["source_ip"])
}
