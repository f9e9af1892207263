package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/schema"
)

func TestCreateEventStoresSeedShapedItem(t *testing.T) {
	e := newEnv(t)
	before := time.Now().UTC().Truncate(time.Microsecond)
	r := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a",
		body:    `{"event_type":"user.created","payload":{"email":"a@example.com"}}`,
		headers: map[string]string{"X-Correlation-Id": "req-abc123"}})
	require.Equal(t, http.StatusCreated, r.code, "POST /v1/events = %d %s", r.code, r.body)
	assert.Equal(t, "req-abc123", r.header.Get("X-Correlation-Id"), "correlation id not echoed")
	ev := r.event(t)
	assert.Equal(t, "/v1/events/"+ev.ID, r.header.Get("Location"))
	assert.Equal(t, "user.created", ev.Type)
	assert.Equal(t, event.Received, ev.Status)
	assert.Equal(t, 0, ev.RetryCount)
	assert.Equal(t, event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1", CorrelationID: "req-abc123"}, ev.Metadata)
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, ev.Timestamp)
	ts, err := event.ParseID(ev.ID)
	require.NoError(t, err, "event id %q does not parse", ev.ID)
	assert.Equal(t, ev.Timestamp, event.FormatTime(ts), "timestamp is not the one the id encodes")
	assert.False(t, ts.Before(before), "timestamp %s before the request %s", ts, before)

	out, err := db.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.table),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: "tenant-a"},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: ev.Timestamp + "#" + ev.ID},
		},
	})
	require.NoError(t, err)
	item := out.Item
	require.NotNil(t, item, "no item under timestamp#event_id")
	str := func(k string) string { return item[k].(*types.AttributeValueMemberS).Value }
	num := func(k string) string { return item[k].(*types.AttributeValueMemberN).Value }
	assert.Equal(t, ev.ID, str(schema.AttrEventID))
	assert.Equal(t, "user.created", str(schema.AttrEventType))
	assert.Equal(t, "received", str(schema.AttrStatus))
	assert.Equal(t, ev.Timestamp, str(schema.AttrTimestamp))
	assert.Equal(t, "user.created#"+ev.Timestamp, str(schema.AttrEventTypeTS))
	assert.Equal(t, "received#"+ev.Timestamp, str(schema.AttrStatusTS))
	assert.Equal(t, "0", num(schema.AttrRetryCount))
	assert.Equal(t, fmt.Sprint(ts.Add(30*24*time.Hour).Unix()), num(schema.AttrTTL), "ttl is not timestamp + 30 days")
	md := item[schema.AttrMetadata].(*types.AttributeValueMemberM).Value
	assert.Equal(t, "v1", md["api_version"].(*types.AttributeValueMemberS).Value)
	assert.Equal(t, "req-abc123", md["correlation_id"].(*types.AttributeValueMemberS).Value)
	assert.Equal(t, "192.0.2.1", md["source_ip"].(*types.AttributeValueMemberS).Value)
	assert.Len(t, item, 12, "item attributes: %v", keys(item))
}

func keys(m map[string]types.AttributeValue) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCreateEventRejectsBadInput(t *testing.T) {
	e := newEnv(t)
	deep := `{"event_type":"x","payload":` + strings.Repeat(`{"a":`, event.MaxPayloadDepth+1) + `1` + strings.Repeat(`}`, event.MaxPayloadDepth+1) + `}`
	deepList := `{"event_type":"x","payload":{"a":` + strings.Repeat(`[`, event.MaxPayloadDepth) + strings.Repeat(`]`, event.MaxPayloadDepth) + `}}`
	big := `{"event_type":"x","payload":{"s":"` + strings.Repeat("x", event.MaxBodyBytes) + `"}}`
	tests := []struct {
		name string
		r    req
		code int
		err  string
	}{
		{"malformed JSON", req{body: `{"event_type":"x","payload":{`}, 400, "invalid_json"},
		{"not JSON", req{body: `hello`}, 400, "invalid_json"},
		{"empty body", req{body: ` `}, 400, "invalid_json"},
		{"two values", req{body: `{"event_type":"x","payload":{}} {}`}, 400, "invalid_json"},
		{"array body", req{body: `[]`}, 400, "invalid_json"},
		{"unknown field", req{body: `{"event_type":"x","payload":{},"extra":1}`}, 400, "invalid_json"},
		{"event_type number", req{body: `{"event_type":1,"payload":{}}`}, 400, "invalid_json"},
		{"event_type missing", req{body: `{"payload":{}}`}, 400, "invalid_event"},
		{"event_type empty", req{body: `{"event_type":"","payload":{}}`}, 400, "invalid_event"},
		{"event_type with hash", req{body: `{"event_type":"a#b","payload":{}}`}, 400, "invalid_event"},
		{"event_type too long", req{body: `{"event_type":"` + strings.Repeat("a", 129) + `","payload":{}}`}, 400, "invalid_event"},
		{"payload missing", req{body: `{"event_type":"x"}`}, 400, "invalid_payload"},
		{"payload null", req{body: `{"event_type":"x","payload":null}`}, 400, "invalid_payload"},
		{"payload array", req{body: `{"event_type":"x","payload":[1]}`}, 400, "invalid_payload"},
		{"payload string", req{body: `{"event_type":"x","payload":"s"}`}, 400, "invalid_payload"},
		{"payload number", req{body: `{"event_type":"x","payload":1}`}, 400, "invalid_payload"},
		{"payload too deep (objects)", req{body: deep}, 400, "invalid_payload"},
		{"payload too deep (arrays)", req{body: deepList}, 400, "invalid_payload"},
		{"39 significant digits", req{body: `{"event_type":"x","payload":{"n":123456789012345678901234567890123456789}}`}, 400, "invalid_payload"},
		{"number too large", req{body: `{"event_type":"x","payload":{"n":1e126}}`}, 400, "invalid_payload"},
		{"number too small", req{body: `{"event_type":"x","payload":{"n":1e-131}}`}, 400, "invalid_payload"},
		{"huge exponent", req{body: `{"event_type":"x","payload":{"n":1e99999999999999999999}}`}, 400, "invalid_payload"},
		{"empty key", req{body: `{"event_type":"x","payload":{"":1}}`}, 400, "invalid_payload"},
		{"body over 256 KiB", req{body: big}, 413, "payload_too_large"},
		{"no content type", req{body: `{"event_type":"x","payload":{}}`, noContentType: true}, 415, "unsupported_media_type"},
		{"text/plain", req{body: `{"event_type":"x","payload":{}}`, headers: map[string]string{"Content-Type": "text/plain"}}, 415, "unsupported_media_type"},
		// Found by review: a gzip body was a 400 invalid_json about a
		// character '\x1f', a UTF-16 one a 400 too.
		{"gzip body", req{body: "\x1f\x8b\x08", headers: map[string]string{"Content-Encoding": "gzip"}}, 415, "unsupported_media_type"},
		{"UTF-16 charset", req{body: `{"event_type":"x","payload":{}}`, headers: map[string]string{"Content-Type": "application/json; charset=utf-16"}}, 415, "unsupported_media_type"},
		{"bad idempotency key", req{body: `{"event_type":"x","payload":{}}`, headers: map[string]string{"Idempotency-Key": "has space"}}, 400, "invalid_idempotency_key"},
		{"bad correlation id", req{body: `{"event_type":"x","payload":{}}`, headers: map[string]string{"X-Correlation-Id": strings.Repeat("c", 129)}}, 400, "invalid_header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.with(t)
			tt.r.method, tt.r.path, tt.r.tenant = "POST", "/v1/events", "tenant-a"
			r := e.do(tt.r)
			assert.Equal(t, tt.code, r.code, "POST /v1/events (%s) = %d %s, want %d", tt.name, r.code, r.body, tt.code)
			assert.Equal(t, tt.err, r.errCode(t), "error code")
		})
	}
	assert.Equal(t, 0, e.itemCount(), "rejected requests wrote items")
}

func TestCreateEventAcceptsLimits(t *testing.T) {
	e := newEnv(t)
	deep := strings.Repeat(`{"a":`, event.MaxPayloadDepth-1) + `{}` + strings.Repeat(`}`, event.MaxPayloadDepth-1)
	for name, payload := range map[string]string{
		"deepest payload":    deep,
		"38 digits":          `{"n":12345678901234567890123456789012345678}`,
		"largest magnitude":  `{"n":9.9999999999999999999999999999999999999e125}`,
		"smallest magnitude": `{"n":-1e-130}`,
		"zero with exponent": `{"n":0e125}`, // 0e126 and beyond: 400 (nofivexx_test.go)
		"empty object":       `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := e.with(t)
			r := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"x","payload":` + payload + `}`})
			assert.Equal(t, http.StatusCreated, r.code, "POST %s = %d %s", payload[:min(len(payload), 60)], r.code, r.body)
		})
	}
	// The largest body accepted: exactly 256 KiB.
	prefix, suffix := `{"event_type":"x","payload":{"s":"`, `"}}`
	body := prefix + strings.Repeat("y", event.MaxBodyBytes-len(prefix)-len(suffix)) + suffix
	r := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: body})
	assert.Equal(t, http.StatusCreated, r.code, "POST of exactly 256 KiB = %d, want 201", r.code)
	// UTF-8 named in any case, and the identity encoding, are fine.
	for _, h := range []map[string]string{
		{"Content-Type": "application/json; charset=UTF-8"},
		{"Content-Type": "application/json; charset=utf-8", "Content-Encoding": "identity"},
	} {
		r := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"x","payload":{}}`, headers: h})
		assert.Equal(t, http.StatusCreated, r.code, "%v: %s", h, r.body)
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	body := `{"event_type":"order.paid","payload":{"b":2,"a":1}}`
	h := map[string]string{"Idempotency-Key": "order-42"}
	first := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: body, headers: h})
	require.Equal(t, http.StatusCreated, first.code, "%s", first.body)
	same := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"payload":{"a":1,"b":2},"event_type":"order.paid"}`, headers: h})
	assert.Equal(t, http.StatusOK, same.code, "repeat = %d %s, want 200", same.code, same.body)
	assert.JSONEq(t, string(first.body), string(same.body), "repeat returned another event")

	other := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"order.paid","payload":{"a":2}}`, headers: h})
	assert.Equal(t, http.StatusUnprocessableEntity, other.code, "same key, other body = %d %s", other.code, other.body)
	assert.Equal(t, "idempotency_key_reused", other.errCode(t))

	// The same key from another tenant is another key.
	b := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-b", body: body, headers: h})
	assert.Equal(t, http.StatusCreated, b.code, "tenant-b with tenant-a's key = %d %s", b.code, b.body)
	assert.NotEqual(t, first.event(t).ID, b.event(t).ID)

	assert.Equal(t, 1, e.count("tenant-a"), "tenant-a events")
	assert.Equal(t, 1, e.count("tenant-b"), "tenant-b events")
}

func TestIdempotencyUnderConcurrency(t *testing.T) {
	e := newEnv(t)
	const n = 20
	var wg sync.WaitGroup
	results := make([]resp, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = e.serve(req{method: "POST", path: "/v1/events", tenant: "tenant-a",
				body: `{"event_type":"pay","payload":{"amount":10}}`, headers: map[string]string{"Idempotency-Key": "same-key"}})
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	ids := map[string]bool{}
	for i, r := range results {
		e.checked(req{method: "POST", path: "/v1/events"}, r)
		require.Contains(t, []int{200, 201}, r.code, "request %d = %d %s", i, r.code, r.body)
		if r.code == 201 {
			created++
		}
		ids[r.event(t).ID] = true
	}
	assert.Equal(t, 1, created, "201 responses")
	assert.Len(t, ids, 1, "distinct events returned: %v", ids)
	assert.Equal(t, 1, e.count("tenant-a"), "events stored")
	// One event plus one idempotency record in the whole table.
	assert.Equal(t, 2, e.itemCount(), "items in the table")
}

func TestBatch(t *testing.T) {
	e := newEnv(t)
	r := e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-a", body: `{"events":[
		{"event_type":"a","payload":{"i":0}},
		{"event_type":"bad#type","payload":{}},
		{"event_type":"c","payload":[]},
		{"event_type":"d","payload":{"i":3}},
		42
	]}`})
	require.Equal(t, http.StatusMultiStatus, r.code, "%s", r.body)
	m := r.json(t)
	results := m["results"].([]any)
	require.Len(t, results, 5)
	wantStatus := []string{"201", "400", "400", "201", "400"}
	wantCode := []string{"", "invalid_event", "invalid_payload", "", "invalid_json"}
	for i, x := range results {
		res := x.(map[string]any)
		assert.Equal(t, fmt.Sprint(i), fmt.Sprint(res["index"]))
		assert.Equal(t, wantStatus[i], fmt.Sprint(res["status"]), "result %d: %v", i, res)
		if wantCode[i] == "" {
			ev := res["event"].(map[string]any)
			got, err := e.store.Get(context.Background(), "tenant-a", ev["event_id"].(string))
			require.NoError(t, err, "stored event %d", i)
			assert.Equal(t, fmt.Sprint(i), fmt.Sprint(eventtest.Decoded(got.Payload)["i"]))
		} else {
			assert.Equal(t, wantCode[i], res["error"].(map[string]any)["code"], "result %d", i)
		}
	}
	assert.Equal(t, 2, e.count("tenant-a"), "stored events")

	full := make([]string, event.MaxBatch)
	for i := range full {
		full[i] = fmt.Sprintf(`{"event_type":"bulk","payload":{"i":%d}}`, i)
	}
	r = e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-b", body: `{"events":[` + strings.Join(full, ",") + `]}`})
	require.Equal(t, http.StatusMultiStatus, r.code, "%s", r.body)
	assert.Equal(t, event.MaxBatch, e.count("tenant-b"))
	// The inbox lists a batch in its order (oldest first with order=asc).
	var got batchIDs
	require.NoError(t, jsonUnmarshal(r.body, &got))
	var want []string
	for _, res := range got.Results {
		want = append(want, res.Event.ID)
	}
	assert.Equal(t, want, e.all("tenant-b", "order=asc&limit=100"))

	for name, body := range map[string]string{
		"26 events":    `{"events":[` + strings.Join(append(full, full[0]), ",") + `]}`,
		"no events":    `{"events":[]}`,
		"missing":      `{}`,
		"events null":  `{"events":null}`,
		"events array": `[]`,
	} {
		r := e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-c", body: body})
		assert.Equal(t, http.StatusBadRequest, r.code, "batch %s = %d %s", name, r.code, r.body)
	}
	r = e.do(req{method: "POST", path: "/v1/events/batch", tenant: "tenant-c", body: `{"events":[]}`, headers: map[string]string{"Idempotency-Key": "k"}})
	assert.Equal(t, "invalid_idempotency_key", r.errCode(t))
	assert.Equal(t, 0, e.count("tenant-c"))
}

type batchIDs struct {
	Results []struct {
		Event struct {
			ID string `json:"event_id"`
		} `json:"event"`
	} `json:"results"`
}

// X-Correlation-Id sent twice is a 400 invalid_header, nothing stored: the
// function read the first value (stored and echoed it, the second never
// checked) while API Gateway's own answers echo the last, so one request
// had two correlation ids.
func TestCreateEventRefusesTwoCorrelationIDs(t *testing.T) {
	e := newEnv(t)
	for _, vs := range [][]string{{"corr-a", "corr-b"}, {"corr-a", "corr-a"}, {"corr-a", "has space"}} {
		r := httptest.NewRequest("POST", "/v1/events", strings.NewReader(`{"event_type":"t","payload":{}}`))
		r.Header.Set("Content-Type", "application/json")
		for _, v := range vs {
			r.Header.Add("X-Correlation-Id", v)
		}
		r = r.WithContext(httpapi.WithTenant(r.Context(), "tenant-a"))
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, r)
		got := resp{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
		assert.Equal(t, http.StatusBadRequest, got.code, "%q: %s", vs, got.body)
		assert.Equal(t, "invalid_header", got.errCode(t), "%q", vs)
		assert.Contains(t, string(got.body), "X-Correlation-Id is given 2 times", "%q", vs)
		assert.Empty(t, got.header.Values("X-Correlation-Id"), "%q: no value echoed", vs)
	}
	assert.Equal(t, 0, e.itemCount(), "a refused request wrote items")
}

// X-Correlation-Id present but empty (a client's unset variable) is a 400
// invalid_header naming it, nothing stored, as an empty Idempotency-Key
// is: it was taken for no header, and the event stored without the
// correlation id the client meant to send.
func TestCreateEventRefusesAnEmptyCorrelationID(t *testing.T) {
	e := newEnv(t)
	r := httptest.NewRequest("POST", "/v1/events", strings.NewReader(`{"event_type":"t","payload":{}}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header["X-Correlation-Id"] = []string{""}
	r = r.WithContext(httpapi.WithTenant(r.Context(), "tenant-a"))
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, r)
	got := resp{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	assert.Equal(t, http.StatusBadRequest, got.code, "%s", got.body)
	assert.Equal(t, "invalid_header", got.errCode(t))
	assert.Contains(t, string(got.body), "X-Correlation-Id is empty")
	assert.Empty(t, got.header.Values("X-Correlation-Id"), "no value echoed")
	assert.Equal(t, 0, e.itemCount(), "a refused request wrote items")
}

// Content-Type sent twice is a 415 naming it, whatever the second value
// (the first was read and the second never checked, so application/json
// then text/plain was stored), on every route with a body, and nothing
// is written.
func TestBodyRoutesRefuseTwoContentTypes(t *testing.T) {
	e := newEnv(t)
	for _, rt := range []struct{ method, path, body string }{
		{"POST", "/v1/events", `{"event_type":"t","payload":{}}`},
		{"POST", "/v1/events/batch", `{"events":[{"event_type":"t","payload":{}}]}`},
		{"POST", "/v1/inbox/ack", `{"event_ids":["x"]}`},
	} {
		for _, vs := range [][]string{{"application/json", "text/plain"}, {"application/json", "application/json"}} {
			r := httptest.NewRequest(rt.method, rt.path, strings.NewReader(rt.body))
			for _, v := range vs {
				r.Header.Add("Content-Type", v)
			}
			r = r.WithContext(httpapi.WithTenant(r.Context(), "tenant-a"))
			rec := httptest.NewRecorder()
			e.api.ServeHTTP(rec, r)
			got := resp{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
			assert.Equal(t, http.StatusUnsupportedMediaType, got.code, "%s %q: %s", rt.path, vs, got.body)
			assert.Equal(t, "unsupported_media_type", got.errCode(t), "%s %q", rt.path, vs)
			assert.Contains(t, string(got.body), "Content-Type is given 2 times", "%s %q", rt.path, vs)
		}
	}
	assert.Equal(t, 0, e.itemCount(), "a refused request wrote items")
}
