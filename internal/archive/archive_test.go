package archive_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/archive"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/schema"
)

var (
	db   *ddbtest.Local
	moto *mototest.Engine // S3 and SQS
)

func TestMain(m *testing.M) {
	os.Exit(mototest.Main(mototest.RunFunc(func() int { return ddbtest.Main(m, &db) }), &moto))
}

// fakeS3 is an S3 endpoint that records PutObject calls as the real SDK
// serializes them (path-style PUT /<bucket>/<key>). PUTs for keys
// containing failKey are refused with 403 AccessDenied (not retried).
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string][]byte      // "bucket/key" -> body as sent
	headers map[string]http.Header // "bucket/key" -> request headers
	puts    int
	failKey string
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") {
		body = decodeChunked(body)
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	if r.Method != http.MethodPut {
		http.Error(w, "only PutObject", http.StatusMethodNotAllowed)
		return
	}
	if f.failKey != "" && strings.Contains(path, f.failKey) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>r1</RequestId></Error>`)
		return
	}
	f.objects[path] = body
	f.headers[path] = r.Header.Clone()
	w.Header().Set("ETag", `"etag"`)
	w.WriteHeader(http.StatusOK)
}

// decodeChunked undoes aws-chunked content encoding (chunks of
// "<hex size>[;ext]\r\n<data>\r\n", then "0\r\n" and trailers).
func decodeChunked(b []byte) []byte {
	var out []byte
	rd := bufio.NewReader(bytes.NewReader(b))
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return out
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(line, ";", 2)[0]), 16, 64)
		if err != nil || size == 0 {
			return out
		}
		chunk := make([]byte, size)
		if _, err := io.ReadFull(rd, chunk); err != nil {
			return out
		}
		out = append(out, chunk...)
		rd.ReadString('\n')
	}
}

func newFakeS3(t *testing.T) (*fakeS3, *s3.Client) {
	f := &fakeS3{objects: map[string][]byte{}, headers: map[string]http.Header{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := s3.NewFromConfig(ddb.LocalConfig(ddb.Options{}), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.UsePathStyle = true
	})
	return f, client
}

// lines decodes one archived object: gzip, then JSON lines.
func gunzipLines(t *testing.T, body []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err, "the object is gzip")
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.True(t, bytes.HasSuffix(raw, []byte("\n")), "every line ends in a newline")
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

// world: an events table on DynamoDB Local with the real HTTP API in
// front, on a clock the test sets (events on two different days). The
// store's ttl filters keep the wall clock: with ten years' retention no
// item expires by either.
type world struct {
	t     *testing.T
	table string
	api   *httpapi.API
	now   time.Time
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, table: db.CreateTable(t, schema.Events()), now: time.Date(2026, 10, 1, 23, 59, 59, 0, time.UTC)}
	clock := func() time.Time { return w.now }
	api, err := httpapi.New(httpapi.Config{
		Store:        store.New(db.Client, w.table),
		CursorSecret: []byte("0123456789abcdef0123456789abcdef-archive-test"),
		Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Now:          clock,
		// The clock is in the past: with the default 30 days the items'
		// ttl would already have passed, and DynamoDB Local deletes
		// expired items at random times, under the test.
		Retention: 3650 * 24 * time.Hour,
	})
	require.NoError(t, err)
	w.api = api
	return w
}

func (w *world) call(method, path, tenant, body string, headers map[string]string) (int, []byte) {
	w.t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	r = r.WithContext(httpapi.WithTenant(r.Context(), tenant))
	rec := httptest.NewRecorder()
	w.api.ServeHTTP(rec, r)
	return rec.Code, rec.Body.Bytes()
}

func (w *world) post(tenant, body string, headers map[string]string) string {
	w.t.Helper()
	code, out := w.call("POST", "/v1/events", tenant, body, headers)
	require.Contains(w.t, []int{http.StatusCreated, http.StatusOK}, code, "POST /v1/events = %d %s", code, out)
	var e struct {
		ID string `json:"event_id"`
	}
	require.NoError(w.t, json.Unmarshal(out, &e))
	return e.ID
}

// get returns the API's JSON of the event, without the newline.
func (w *world) get(tenant, id string) string {
	w.t.Helper()
	code, out := w.call("GET", "/v1/events/"+id, tenant, "", nil)
	require.Equal(w.t, http.StatusOK, code, "%s", out)
	return string(bytes.TrimSuffix(out, []byte("\n")))
}

// deleteAll deletes every item of the table (events and idempotency
// records), as TTL would, and returns the stream's records: INSERTs,
// MODIFYs and REMOVEs, through Lambda's JSON encoding.
func (w *world) deleteAll(wantRecords int) events.DynamoDBEvent {
	w.t.Helper()
	ctx := context.Background()
	w.deleteItems()
	arn, err := streampoll.LatestStreamARN(ctx, db.Client, w.table)
	require.NoError(w.t, err)
	r := streampoll.NewStreamReader(ddblocal.NewStreamsClient(db.Endpoint), arn, streampoll.StreamReaderOptions{Region: ddb.LocalRegion})
	var all events.DynamoDBEvent
	deadline := time.Now().Add(20 * time.Second)
	for len(all.Records) < wantRecords && time.Now().Before(deadline) {
		batches, err := r.Next(ctx)
		require.NoError(w.t, err)
		for _, b := range batches {
			all.Records = append(all.Records, b.Event.Records...)
		}
		if len(batches) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	require.Len(w.t, all.Records, wantRecords, "stream records")
	raw, err := json.Marshal(all)
	require.NoError(w.t, err)
	var decoded events.DynamoDBEvent
	require.NoError(w.t, json.Unmarshal(raw, &decoded))
	return decoded
}

// deleteItems deletes every item of the table, as TTL would.
func (w *world) deleteItems() {
	w.t.Helper()
	ctx := context.Background()
	p := dynamodb.NewScanPaginator(db.Client, &dynamodb.ScanInput{TableName: aws.String(w.table)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		require.NoError(w.t, err)
		for _, it := range out.Items {
			_, err := db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(w.table), Key: map[string]types.AttributeValue{
				schema.AttrUserID: it[schema.AttrUserID], schema.AttrTimestampEventID: it[schema.AttrTimestampEventID],
			}})
			require.NoError(w.t, err)
		}
	}
}

// ttlIdentity marks a REMOVE record as DynamoDB's TTL makes it (DynamoDB
// Local's TTL deletion is unreliable, so the test deletes and marks).
func ttlIdentity(r *events.DynamoDBEventRecord) {
	r.UserIdentity = &events.DynamoDBUserIdentity{Type: archive.TTLIdentityType, PrincipalID: archive.TTLIdentityPrincipal}
}

func tenantOf(r events.DynamoDBEventRecord) string {
	return r.Change.Keys[schema.AttrUserID].String()
}

const bigPayload = `{"big":123456789012345678901234567890123456,"neg":-98765432109876543210,"pi":3.14159265358979323846264338327950288,"tiny":1E-130,"unicode":"héllo ✓ 𝄞 日本語 \u2028","html":"<a href=\"x\">&amp;</a>","nested":{"a":[1,{"b":[true,false,null,"x",[[[]]]]}],"empty":{},"list":[]}}`

type scenario struct {
	w       *world
	ev      events.DynamoDBEvent
	apiJSON map[string]string // event id -> the API's JSON just before deletion
	userDel string            // the event deleted by a user
	big     string            // the event with bigPayload, PATCHed to delivered
}

// newScenario: acme ingests two events on 2026-10-01 (one with an
// Idempotency-Key, so an idempotency record too) and one on 2026-10-02,
// one of them PATCHed to delivered; globex ingests two on 2026-10-02.
// Then every item is deleted: all REMOVEs carry the TTL identity except
// the deletion of one globex event (a user delete).
func newScenario(t *testing.T) *scenario {
	w := newWorld(t)
	s := &scenario{w: w, apiJSON: map[string]string{}}
	var ids []string
	tenants := map[string]string{}
	add := func(tenant, id string) { ids = append(ids, id); tenants[id] = tenant }

	add("acme", w.post("acme", `{"event_type":"user.created","payload":`+bigPayload+`}`, nil))
	add("acme", w.post("acme", `{"event_type":"order.placed","payload":{"qty":2,"price":19.99}}`, map[string]string{"Idempotency-Key": "k-1"}))
	w.now = w.now.Add(2 * time.Second) // 2026-10-02
	add("acme", w.post("acme", `{"event_type":"order.placed","payload":{"n":1}}`, nil))
	add("globex", w.post("globex", `{"event_type":"a.one","payload":{}}`, nil))
	add("globex", w.post("globex", `{"event_type":"a.two","payload":{"x":"y"}}`, nil))
	code, out := w.call("PATCH", "/v1/events/"+ids[0], "acme", `{"status":"delivered"}`, nil)
	require.Equal(t, http.StatusOK, code, "%s", out)
	for _, id := range ids {
		s.apiJSON[id] = w.get(tenants[id], id)
	}
	s.userDel, s.big = ids[4], ids[0]

	// 5 events + 1 idempotency record inserted, 1 MODIFY, 6 REMOVEs.
	s.ev = w.deleteAll(13)
	removes := 0
	for i := range s.ev.Records {
		r := &s.ev.Records[i]
		// DynamoDB Local quirk: now and then it names a deletion's record
		// UNKNOWN_TO_SDK_VERSION (its Java SDK's name for an unknown
		// operation) instead of REMOVE; real streams never do.
		if r.EventName == "UNKNOWN_TO_SDK_VERSION" && len(r.Change.NewImage) == 0 && len(r.Change.OldImage) > 0 {
			r.EventName = "REMOVE"
		}
		if r.EventName != "REMOVE" {
			continue
		}
		require.NotEmpty(t, r.Change.OldImage, "the stream (NEW_AND_OLD_IMAGES) carries the old image")
		removes++
		if r.Change.OldImage[schema.AttrEventID].String() != s.userDel {
			ttlIdentity(r)
		}
	}
	require.Equal(t, 6, removes, "REMOVE records")
	return s
}

func newArchiver(t *testing.T, p archive.Putter) (*archive.Archiver, *syncio.Buffer) {
	t.Helper()
	logs := &syncio.Buffer{}
	a, err := archive.New(archive.Config{Putter: p, Bucket: "archive-bucket", Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	return a, logs
}

// The TTL deletions of real stream records are written, through the real
// S3 serializers, as gzip JSON lines partitioned by tenant and day, each
// line exactly the API's JSON of the event; user deletes and the
// idempotency record are not archived; a retry writes the same objects.
func TestArchiveRealStreamRecords(t *testing.T) {
	s := newScenario(t)
	f, client := newFakeS3(t)
	a, logs := newArchiver(t, client)

	// Through Lambda's JSON, as the function receives it.
	payload, err := json.Marshal(s.ev)
	require.NoError(t, err)
	resp, err := a.HandleJSON(context.Background(), payload)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "logs: %s", logs.String())

	got := map[string][]string{}
	for k, body := range f.objects {
		got[k] = gunzipLines(t, body)
		assert.Equal(t, archive.ContentType, f.headers[k].Get("Content-Type"), k)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Len(t, keys, 3, "acme 2026-10-01, acme 2026-10-02, globex 2026-10-02: %v\nrecords: %s\nlogs: %s", keys, payload, logs.String())
	prefixes := []string{
		"archive-bucket/expired/tenant=acme/date=2026-10-01/",
		"archive-bucket/expired/tenant=acme/date=2026-10-02/",
		"archive-bucket/expired/tenant=globex/date=2026-10-02/",
	}
	for i, k := range keys {
		assert.True(t, strings.HasPrefix(k, prefixes[i]), "key %s, want prefix %s", k, prefixes[i])
		assert.True(t, strings.HasSuffix(k, ".jsonl.gz"), k)
	}

	var ids []string
	byID := map[string]string{}
	for _, k := range keys {
		for _, line := range got[k] {
			var e struct {
				ID string `json:"event_id"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &e))
			ids = append(ids, e.ID)
			byID[e.ID] = line
			// Byte for byte what GET /v1/events/{id} returned (no U+FFFE
			// in these payloads, the one escape the encoders differ on).
			assert.Equal(t, s.apiJSON[e.ID], line, "line of %s", e.ID)
		}
	}
	assert.Len(t, ids, 4, "every TTL-deleted event once; not the user-deleted one, not the idempotency record")
	assert.NotContains(t, ids, s.userDel)
	assert.Contains(t, byID[s.big], `"status":"delivered"`, "the old image is the last state")
	assert.Contains(t, byID[s.big], `"big":123456789012345678901234567890123456`, "numbers keep their digits")
	assert.Contains(t, byID[s.big], `"tiny":1E-130`)

	// A retried batch overwrites the same keys with the same bytes.
	before := map[string][]byte{}
	for k, v := range f.objects {
		before[k] = v
	}
	resp, err = a.Handle(context.Background(), s.ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Equal(t, before, f.objects, "same keys, same bodies")
	assert.Equal(t, 6, f.puts, "three objects, twice")
}

// A PutObject that fails reports every record of that object (and only
// those) as batch item failures; the other objects are written.
func TestArchiveFailedPut(t *testing.T) {
	s := newScenario(t)
	f, client := newFakeS3(t)
	f.failKey = "tenant=acme/date=2026-10-02"
	a, logs := newArchiver(t, client)

	resp, err := a.Handle(context.Background(), s.ev)
	require.NoError(t, err)
	var want []string
	for _, r := range s.ev.Records {
		if archive.IsTTLExpiry(r) && tenantOf(r) == "acme" && strings.HasPrefix(r.Change.OldImage[schema.AttrTimestamp].String(), "2026-10-02") {
			want = append(want, r.Change.SequenceNumber)
		}
	}
	require.Len(t, want, 1)
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	assert.Equal(t, want, failed)
	assert.Len(t, f.objects, 2, "the other two objects are written")
	assert.Contains(t, logs.String(), `"msg":"archive object not written"`)
	assert.Contains(t, logs.String(), "AccessDenied")
}

func image(tenant, id, ts string) map[string]events.DynamoDBAttributeValue {
	return map[string]events.DynamoDBAttributeValue{
		schema.AttrUserID:    events.NewStringAttribute(tenant),
		schema.AttrEventID:   events.NewStringAttribute(id),
		schema.AttrEventType: events.NewStringAttribute("t.x"),
		schema.AttrStatus:    events.NewStringAttribute("received"),
		schema.AttrTimestamp: events.NewStringAttribute(ts),
		schema.AttrPayload:   events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"n": events.NewNumberAttribute("12345678901234567890123456789012345678")}),
	}
}

func removed(seq string, old map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	r := events.DynamoDBEventRecord{EventName: "REMOVE"}
	r.Change.SequenceNumber = seq
	r.Change.OldImage = old
	r.Change.StreamViewType = "NEW_AND_OLD_IMAGES"
	if old != nil {
		r.Change.Keys = map[string]events.DynamoDBAttributeValue{schema.AttrUserID: old[schema.AttrUserID]}
	}
	ttlIdentity(&r)
	return r
}

func TestConvert(t *testing.T) {
	ok := removed("1", image("acme", "e1", "2026-01-31T23:59:59.999999Z"))
	line, archived, err := archive.Convert(ok)
	require.NoError(t, err)
	require.True(t, archived)
	assert.Equal(t, archive.Line{Tenant: "acme", Day: "2026-01-31", EventID: "e1", SequenceNumber: "1",
		JSON: []byte(`{"event_id":"e1","event_type":"t.x","payload":{"n":12345678901234567890123456789012345678},"status":"received","timestamp":"2026-01-31T23:59:59.999999Z","retry_count":0,"metadata":{"source_ip":"","api_version":""}}`)}, line)

	for name, r := range map[string]events.DynamoDBEventRecord{
		"insert": {EventName: "INSERT"},
		"modify": {EventName: "MODIFY"},
		"user delete": func() events.DynamoDBEventRecord {
			r := removed("2", image("a", "e", "2026-01-01T00:00:00Z"))
			r.UserIdentity = nil
			return r
		}(),
		"other service": func() events.DynamoDBEventRecord {
			r := removed("2", image("a", "e", "2026-01-01T00:00:00Z"))
			r.UserIdentity.PrincipalID = "x.amazonaws.com"
			return r
		}(),
		"idempotency record": removed("3", map[string]events.DynamoDBAttributeValue{schema.AttrUserID: events.NewStringAttribute(store.IdempotencyPartition("acme", "k"))}),
		"webhook attempt":    removed("3", image(contract.AttemptPrefix+"acme#e1", "e1", "2026-01-01T00:00:00Z")),
		"subscription":       removed("3", image(contract.SubscriptionPrefix+"acme", "s1", "2026-01-01T00:00:00Z")),
	} {
		_, archived, err := archive.Convert(r)
		assert.NoError(t, err, name)
		assert.False(t, archived, name)
	}

	bad := image("acme", "e1", "yesterday")
	noPayload := image("acme", "e1", "2026-01-01T00:00:00Z")
	delete(noPayload, schema.AttrPayload)
	for name, r := range map[string]events.DynamoDBEventRecord{
		"no old image (NEW_IMAGE stream)": removed("4", nil),
		"bad timestamp":                   removed("5", bad),
		"no payload":                      removed("6", noPayload),
	} {
		_, _, err := archive.Convert(r)
		assert.ErrorIs(t, err, archive.ErrMalformed, name)
	}
}

func TestKey(t *testing.T) {
	k := archive.Key("expired/", "acme", "2026-01-31", []string{"100", "200"})
	assert.Regexp(t, `^expired/tenant=acme/date=2026-01-31/100-[0-9a-f]{16}\.jsonl\.gz$`, k)
	assert.Equal(t, k, archive.Key("expired/", "acme", "2026-01-31", []string{"100", "200"}), "deterministic")
	assert.NotEqual(t, k, archive.Key("expired/", "acme", "2026-01-31", []string{"100", "201"}))
	assert.Contains(t, archive.Key("p/", "a/b c", "2026-01-31", []string{"1"}), "tenant=a%2Fb%20c/")
	// No records: no first sequence number, the hash of nothing.
	assert.Equal(t, "p/tenant=a/date=2026-01-31/-e3b0c44298fc1c14.jsonl.gz", archive.Key("p/", "a", "2026-01-31", nil))
}

// Build makes one object per tenant and day, ordered by key whatever the
// stream order, each holding its lines in stream order.
func TestBuild(t *testing.T) {
	line := func(tenant, day, id, seq string) archive.Line {
		return archive.Line{Tenant: tenant, Day: day, EventID: id, SequenceNumber: seq, JSON: []byte(`{"event_id":"` + id + `"}`)}
	}
	objs, err := archive.Build("expired/", []archive.Line{
		line("zeta", "2026-01-02", "e1", "1"),
		line("acme", "2026-01-02", "e2", "2"),
		line("acme", "2026-01-01", "e3", "3"),
		line("zeta", "2026-01-02", "e4", "4"),
		line("acme", "2026-01-02", "e5", "5"),
	})
	require.NoError(t, err)
	var got []string
	for _, o := range objs {
		got = append(got, fmt.Sprintf("%s/%s %v %v", o.Tenant, o.Day, o.EventIDs, o.SequenceNumbers))
		assert.Equal(t, archive.Key("expired/", o.Tenant, o.Day, o.SequenceNumbers), o.Key)
		var want []string
		for _, id := range o.EventIDs {
			want = append(want, `{"event_id":"`+id+`"}`)
		}
		assert.Equal(t, want, gunzipLines(t, o.Body), o.Key)
	}
	assert.Equal(t, []string{
		"acme/2026-01-01 [e3] [3]",
		"acme/2026-01-02 [e2 e5] [2 5]",
		"zeta/2026-01-02 [e1 e4] [1 4]",
	}, got)
	assert.True(t, slices.IsSortedFunc(objs, func(a, b archive.Object) int { return strings.Compare(a.Key, b.Key) }))

	objs, err = archive.Build("expired/", nil)
	require.NoError(t, err)
	assert.Empty(t, objs)
}

// Malformed and undecodable records are reported; the rest is archived.
func TestHandleJSONMalformed(t *testing.T) {
	f, client := newFakeS3(t)
	a, logs := newArchiver(t, client)
	good := removed("10", image("acme", "e1", "2026-01-31T10:00:00Z"))
	noImage := removed("11", nil)
	raw, err := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{good, noImage}})
	require.NoError(t, err)
	// A third record aws-lambda-go cannot decode (an unknown type).
	raw = bytes.Replace(raw, []byte(`]}`), []byte(`,{"eventName":"REMOVE","dynamodb":{"SequenceNumber":"12","OldImage":{"x":{"Q":"1"}}}}]}`), 1)
	resp, err := a.HandleJSON(context.Background(), raw)
	require.NoError(t, err)
	assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: "11"}, {ItemIdentifier: "12"}}, resp.BatchItemFailures)
	assert.Len(t, f.objects, 1)
	assert.Equal(t, 1, strings.Count(logs.String(), `"msg":"malformed TTL record: it can never be archived"`))
	// Two malformed records: one more line, with their count.
	assert.Equal(t, 1, strings.Count(logs.String(), `"msg":"malformed TTL records in batch","count":2`), logs.String())

	// One malformed record: no count line.
	a, logs = newArchiver(t, client)
	resp, err = a.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{good, noImage}})
	require.NoError(t, err)
	assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: "11"}}, resp.BatchItemFailures)
	assert.Equal(t, 1, strings.Count(logs.String(), `"msg":"malformed TTL record: it can never be archived"`))
	assert.NotContains(t, logs.String(), "malformed TTL records in batch")
}

func TestNewValidates(t *testing.T) {
	_, err := archive.New(archive.Config{Prefix: "/x"})
	require.Error(t, err)
	for _, want := range []string{"Putter is nil", "Bucket is empty", `Prefix "/x"`} {
		assert.Contains(t, err.Error(), want)
	}
}
