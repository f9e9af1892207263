package streamconsumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m, &db)) }

func streamsClient() *dynamodbstreams.Client {
	return ddblocal.NewStreamsClient(db.Endpoint)
}

// world is an events table on DynamoDB Local with the real HTTP API (and
// so the real store) in front of it.
type world struct {
	t     *testing.T
	table string
	api   *httpapi.API
	st    *store.Store
}

func newWorld(t *testing.T) *world {
	t.Helper()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	api, err := httpapi.New(httpapi.Config{
		Store:        st,
		CursorSecret: []byte("0123456789abcdef0123456789abcdef-delivery-test"),
		Logger:       slog.New(slog.NewJSONHandler(&logBuffer{}, nil)),
	})
	require.NoError(t, err)
	return &world{t: t, table: table, api: api, st: st}
}

// call serves one API request for tenant and returns status and body.
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

// readStream reads the table's stream from TRIM_HORIZON with
// StreamReader until it has want records (DynamoDB Local publishes them
// at once, but be patient), and returns them as one Lambda event that went
// through Lambda's JSON encoding, exactly as the runtime decodes it.
func readStream(t *testing.T, table string, want int) events.DynamoDBEvent {
	t.Helper()
	ctx := context.Background()
	arn, err := streampoll.LatestStreamARN(ctx, db.Client, table)
	require.NoError(t, err)
	r := streampoll.NewStreamReader(streamsClient(), arn, streampoll.StreamReaderOptions{Region: ddb.LocalRegion})
	var all events.DynamoDBEvent
	deadline := time.Now().Add(20 * time.Second)
	for len(all.Records) < want && time.Now().Before(deadline) {
		batches, err := r.Next(ctx)
		require.NoError(t, err)
		for _, b := range batches {
			require.NotEmpty(t, b.ShardID)
			all.Records = append(all.Records, b.Event.Records...)
		}
		if len(batches) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	require.Len(t, all.Records, want, "stream records")
	raw, err := json.Marshal(all)
	require.NoError(t, err)
	var decoded events.DynamoDBEvent
	require.NoError(t, json.Unmarshal(raw, &decoded))
	return decoded
}

// payloads of the test: big integers, unicode, nesting, HTML characters.
var testPayloads = []string{
	`{"big":123456789012345678901234567890123456,"neg":-98765432109876543210,"pi":3.14159265358979323846264338327950288,"tiny":1E-130,"unicode":"héllo ✓ 𝄞 日本語 \u2028","html":"<a href=\"x\">&amp;</a>","nested":{"a":[1,{"b":[true,false,null,"x",[[[]]]]}],"empty":{},"list":[]}}`,
	`{"order":{"id":"o-1","lines":[{"sku":"A","qty":2,"price":19.99}]},"note":null}`,
	`{}`,
	`{"k":"v"}`,
	`{"s":"non-characters \uffff and \ufffe are escaped for SQS"}`,
}

type scenario struct {
	w        *world
	ev       events.DynamoDBEvent
	inserted []string          // event ids in insertion order
	tenant   map[string]string // event id -> tenant
	apiJSON  map[string][]byte // event id -> GET /v1/events/{id} body
	payload  map[string]string // event id -> request payload
}

// newScenario writes events through the API and store, with an
// idempotency key (repeated), a batch, a status change (MODIFY) and a
// deletion (REMOVE), and reads the resulting stream.
func newScenario(t *testing.T) *scenario {
	w := newWorld(t)
	s := &scenario{w: w, tenant: map[string]string{}, apiJSON: map[string][]byte{}, payload: map[string]string{}}
	add := func(id, tenant, payload string) {
		s.inserted = append(s.inserted, id)
		s.tenant[id] = tenant
		s.payload[id] = payload
	}

	id := w.post("acme", `{"event_type":"user.created","payload":`+testPayloads[0]+`}`, nil)
	add(id, "acme", testPayloads[0])

	key := map[string]string{"Idempotency-Key": "order-o-1"}
	id = w.post("acme", `{"event_type":"order.placed","payload":`+testPayloads[1]+`}`, key)
	add(id, "acme", testPayloads[1])
	again := w.post("acme", `{"event_type":"order.placed","payload":`+testPayloads[1]+`}`, key)
	require.Equal(t, id, again, "the repeat returns the original event")

	code, out := w.call("POST", "/v1/events/batch", "globex", `{"events":[{"event_type":"a.one","payload":`+testPayloads[2]+`},{"event_type":"a.two","payload":`+testPayloads[3]+`}]}`, nil)
	require.Equal(t, http.StatusMultiStatus, code, "%s", out)
	var batch struct {
		Results []struct {
			Event struct {
				ID string `json:"event_id"`
			} `json:"event"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(out, &batch))
	require.Len(t, batch.Results, 2)
	add(batch.Results[0].Event.ID, "globex", testPayloads[2])
	add(batch.Results[1].Event.ID, "globex", testPayloads[3])

	id = w.post("globex", `{"event_type":"odd.chars","payload":`+testPayloads[4]+`}`, nil)
	add(id, "globex", testPayloads[4])

	for _, id := range s.inserted {
		code, body := w.call("GET", "/v1/events/"+id, s.tenant[id], "", nil)
		require.Equal(t, http.StatusOK, code, "%s", body)
		s.apiJSON[id] = bytes.TrimSuffix(body, []byte("\n"))
	}

	// A status change (MODIFY) and a deletion, as TTL expiry makes (REMOVE).
	code, out = w.call("PATCH", "/v1/events/"+s.inserted[0], "acme", `{"status":"delivered"}`, nil)
	require.Equal(t, http.StatusOK, code, "%s", out)
	sk, err := event.SortKeyForID(s.inserted[2])
	require.NoError(t, err)
	_, err = db.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(w.table),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: "globex"},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: sk},
		},
	})
	require.NoError(t, err)

	// 5 events + 1 idempotency record inserted, 1 MODIFY, 1 REMOVE.
	s.ev = readStream(t, w.table, 8)
	// The batch's two events are written at once (store.PutBatch: one
	// PutItem each), so they reach the stream in either order: the
	// scenario's events are the stream's, in its order.
	var streamed []string
	for _, r := range s.ev.Records {
		if r.EventName == "INSERT" && !strings.HasPrefix(r.Change.NewImage[schema.AttrUserID].String(), contract.IdempotencyPrefix) {
			streamed = append(streamed, r.Change.NewImage[schema.AttrEventID].String())
		}
	}
	require.ElementsMatch(t, s.inserted, streamed, "the stream's events")
	require.Equal(t, s.inserted[:2], streamed[:2], "the single events before the batch come first")
	s.inserted = streamed
	return s
}

func eventNames(ev events.DynamoDBEvent) []string {
	var out []string
	for _, r := range ev.Records {
		out = append(out, r.EventName)
	}
	return out
}

// TestRealStreamRecords runs the consumer on the records DynamoDB Local's
// stream holds after real writes.
func TestRealStreamRecords(t *testing.T) {
	s := newScenario(t)
	// The stream holds what we think it does: the idempotent write is one
	// transaction of two INSERTs (event and record, in either order).
	names := eventNames(s.ev)
	assert.Equal(t, []string{"INSERT", "INSERT", "INSERT", "INSERT", "INSERT", "INSERT", "MODIFY", "REMOVE"}, names)
	idem := 0
	for _, r := range s.ev.Records {
		if strings.HasPrefix(r.Change.NewImage[schema.AttrUserID].String(), contract.IdempotencyPrefix) {
			idem++
		}
	}
	require.Equal(t, 1, idem, "one idempotency record in the stream")

	fake := &fakeSQS{}
	c, logs := newConsumer(t, fake)
	resp, err := c.Handle(context.Background(), s.ev)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	for _, l := range logs.lines(t) {
		assert.NotEqual(t, "ERROR", l["level"], "log %v", l)
	}

	// Exactly the inserted events, in stream order: no idempotency
	// record, no MODIFY of the status change, no REMOVE.
	require.Equal(t, s.inserted, fake.eventIDs(t))
	for i, m := range fake.sent {
		id := s.inserted[i]
		assert.Equal(t, s.tenant[id], m.Tenant, "tenant attribute of %s", id)
		var body event.Event
		dec := json.NewDecoder(strings.NewReader(m.Body))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&body))
		assert.Equal(t, body.Type, m.EventType, "event_type attribute of %s", id)
		assert.Equal(t, event.Received, body.Status, "the INSERT image is the new event")

		// The body is the API's JSON of the event, byte for byte
		// (U+FFFE/U+FFFF aside, which SQS refuses raw: same meaning).
		if strings.Contains(s.payload[id], `\uffff`) {
			assert.NotEqual(t, string(s.apiJSON[id]), m.Body)
			assert.JSONEq(t, string(s.apiJSON[id]), m.Body)
			assert.Contains(t, m.Body, `\uffff and \ufffe`)
		} else {
			assert.Equal(t, string(s.apiJSON[id]), m.Body, "body of %s = API JSON", id)
		}

		// The payload round-trips exactly: same numbers (digits), strings
		// and structure as the client sent.
		want := map[string]any{}
		dec = json.NewDecoder(strings.NewReader(s.payload[id]))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&want))
		assert.Equal(t, want, eventtest.Decoded(body.Payload), "payload of %s", id)
	}
	assert.Contains(t, fake.sent[0].Body, `"big":123456789012345678901234567890123456`)
	assert.Contains(t, fake.sent[0].Body, `"unicode":"héllo ✓ 𝄞 日本語 \u2028"`)
}

// TestRealStreamPartialFailures: failures on real records report the
// failed record and every later one.
func TestRealStreamPartialFailures(t *testing.T) {
	s := newScenario(t)
	seqsFrom := func(i int) []string {
		out := []string{}
		for _, r := range s.ev.Records[i:] {
			out = append(out, r.Change.SequenceNumber)
		}
		return out
	}
	// index of the record carrying event id in the stream
	indexOf := func(id string) int {
		for i, r := range s.ev.Records {
			if r.EventName == "INSERT" && r.Change.NewImage[schema.AttrEventID].String() == id && !strings.HasPrefix(r.Change.NewImage[schema.AttrUserID].String(), contract.IdempotencyPrefix) {
				return i
			}
		}
		t.Fatalf("event %s not in the stream", id)
		return -1
	}

	t.Run("queue rejects the third event", func(t *testing.T) {
		victim := s.inserted[2]
		fake := &fakeSQS{fail: func(_ int, e sqstypes.SendMessageBatchRequestEntry) *sqstypes.BatchResultErrorEntry {
			if strings.Contains(aws.ToString(e.MessageBody), victim) {
				return senderFault("InvalidMessageContents")
			}
			return nil
		}}
		c, _ := newConsumer(t, fake)
		resp, err := c.Handle(context.Background(), s.ev)
		require.NoError(t, err)
		assert.Equal(t, seqsFrom(indexOf(victim)), seqs(resp))
		assert.NotContains(t, fake.eventIDs(t), victim)
	})

	t.Run("throttled entries are retried and all delivered", func(t *testing.T) {
		fake := &fakeSQS{fail: func(call int, e sqstypes.SendMessageBatchRequestEntry) *sqstypes.BatchResultErrorEntry {
			if call == 1 && *e.Id != "0" {
				return serverFault()
			}
			return nil
		}}
		c, _ := newConsumer(t, fake)
		resp, err := c.Handle(context.Background(), s.ev)
		require.NoError(t, err)
		assert.Empty(t, resp.BatchItemFailures)
		assert.ElementsMatch(t, s.inserted, fake.eventIDs(t))
		assert.Len(t, fake.calls, 2)
	})

	t.Run("malformed record in the middle", func(t *testing.T) {
		ev := events.DynamoDBEvent{Records: append([]events.DynamoDBEventRecord{}, s.ev.Records...)}
		bad := indexOf(s.inserted[3])
		img := map[string]events.DynamoDBAttributeValue{}
		for k, v := range ev.Records[bad].Change.NewImage {
			if k != schema.AttrEventType {
				img[k] = v
			}
		}
		ev.Records[bad].Change.NewImage = img
		fake := &fakeSQS{}
		c, logs := newConsumer(t, fake)
		resp, err := c.Handle(context.Background(), ev)
		require.NoError(t, err)
		assert.Equal(t, seqsFrom(bad), seqs(resp), "the malformed record and every later one are retried, not lost")
		assert.Equal(t, s.inserted[:3], fake.eventIDs(t))
		n := 0
		for _, l := range logs.lines(t) {
			if l["level"] == "ERROR" {
				n++
				assert.Equal(t, ev.Records[bad].Change.SequenceNumber, l["sequence_number"])
			}
		}
		assert.Equal(t, 1, n, "logged once")

		// Lambda retries from the malformed record; once the event source
		// mapping gives up on it (bisect, bounded retries, on-failure
		// destination), the later records go through.
		resp, err = c.Handle(context.Background(), events.DynamoDBEvent{Records: ev.Records[bad+1:]})
		require.NoError(t, err)
		assert.Empty(t, resp.BatchItemFailures)
		assert.Equal(t, append(append([]string{}, s.inserted[:3]...), s.inserted[4]), fake.eventIDs(t))
	})
}

// flakySink delivers through WriterSink but fails chosen events a number
// of times first.
type flakySink struct {
	mu       sync.Mutex
	failures map[string]int // event id -> failures left (-1: forever)
	out      bytes.Buffer
	attempts map[string]int
}

func (f *flakySink) sender() streampoll.SinkFunc {
	write := streampoll.WriterSink(&lockedWriter{mu: &f.mu, w: &f.out})
	return func(ctx context.Context, m streamconsumer.Message) error {
		f.mu.Lock()
		f.attempts[m.EventID]++
		left := f.failures[m.EventID]
		if left > 0 {
			f.failures[m.EventID]--
		}
		f.mu.Unlock()
		if left != 0 {
			return errors.New("sink unavailable")
		}
		return write(ctx, m)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// delivered returns the event ids written to the sink, in order; t may be
// an *assert.CollectT (see logBuffer.lines).
func (f *flakySink) delivered(t require.TestingT) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(f.out.String()), "\n") {
		if line == "" {
			continue
		}
		var l struct {
			Tenant    string `json:"tenant"`
			EventType string `json:"event_type"`
			Event     struct {
				ID   string `json:"event_id"`
				Type string `json:"event_type"`
			} `json:"event"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		require.NotEmpty(t, l.Tenant)
		require.Equal(t, l.Event.Type, l.EventType)
		ids = append(ids, l.Event.ID)
	}
	return ids
}

// TestPoll runs the local poller (StreamReader.Poll) with the consumer
// and a sink, as `make dev` will: failed records are retried from the
// lowest failed sequence number, a record failing forever is skipped
// after the retries, and every other event is delivered.
func TestPoll(t *testing.T) {
	w := newWorld(t)
	var ids []string
	for i := range 6 {
		ids = append(ids, w.post("acme", fmt.Sprintf(`{"event_type":"poll.test","payload":{"i":%d}}`, i), nil))
	}
	sink := &flakySink{failures: map[string]int{ids[1]: 2, ids[4]: -1}, attempts: map[string]int{}}
	c, _ := newConsumer(t, sink.sender(), func(cfg *streamconsumer.Config) { cfg.MaxAttempts = 1 })
	arn, err := streampoll.LatestStreamARN(context.Background(), db.Client, w.table)
	require.NoError(t, err)
	r := streampoll.NewStreamReader(streamsClient(), arn, streampoll.StreamReaderOptions{Limit: 4})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs := &logBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- r.Poll(ctx, c.Handle, streampoll.PollOptions{Interval: 20 * time.Millisecond, MaxRetries: 3, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	}()
	skippedLines := func(t require.TestingT) int {
		n := 0
		for _, l := range logs.lines(t) {
			if strings.Contains(fmt.Sprint(l["msg"]), "skipping") {
				n++
				assert.NotEmpty(t, l["sequence_number"])
			}
		}
		return n
	}
	count := func(t require.TestingT, id string) int {
		n := 0
		for _, got := range sink.delivered(t) {
			if got == id {
				n++
			}
		}
		return n
	}
	// ids[5] goes out with ids[4]'s first attempts (same SendMessageBatch
	// call) and once more after the poller skipped ids[4].
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 1, skippedLines(c), "skipped records logged")
		assert.GreaterOrEqual(c, count(c, ids[5]), 2, "deliveries of ids[5]")
	}, 25*time.Second, 20*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	// At least once: every event but ids[4] arrived, some more than once
	// (records after a failed one are sent again when the shard is
	// retried from it).
	got := sink.delivered(t)
	assert.ElementsMatch(t, []string{ids[0], ids[1], ids[2], ids[3], ids[5]}, unique(got))
	assert.NotContains(t, got, ids[4])
	assert.GreaterOrEqual(t, count(t, ids[2]), 2, "re-sent when the shard was retried from ids[1]")
	assert.Equal(t, 1, skippedLines(t), "the skipped record is logged once")
	sink.mu.Lock()
	assert.Equal(t, 3, sink.attempts[ids[1]], "failed twice, then delivered")
	// At least its first try and three retries as the lowest failed
	// record; it may also have gone out in batches retried for ids[1].
	assert.GreaterOrEqual(t, sink.attempts[ids[4]], 4, "first try plus three retries, then skipped")
	sink.mu.Unlock()

	// A new write after the poller stopped is read by a fresh reader at
	// LATEST only if written after it started.
	latest := streampoll.NewStreamReader(streamsClient(), arn, streampoll.StreamReaderOptions{Latest: true})
	batches, err := latest.Next(context.Background())
	require.NoError(t, err)
	assert.Empty(t, batches, "LATEST skips what is already in the stream")
	newID := w.post("acme", `{"event_type":"late","payload":{}}`, nil)
	var late []string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		batches, err := latest.Next(context.Background())
		require.NoError(c, err)
		for _, b := range batches {
			for _, rec := range b.Event.Records {
				late = append(late, rec.Change.NewImage[schema.AttrEventID].String())
			}
		}
		assert.NotEmpty(c, late, "records read at LATEST")
	}, 30*time.Second, 20*time.Millisecond) // answered as soon as read
	assert.Equal(t, []string{newID}, late)
}

func TestLatestStreamARNWithoutStream(t *testing.T) {
	tbl := schema.Events()
	tbl.Stream = schema.StreamNone
	table := db.CreateTable(t, tbl)
	_, err := streampoll.LatestStreamARN(context.Background(), db.Client, table)
	assert.ErrorContains(t, err, "has no stream")
}

func unique(ids []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// A reader that starts on a new, empty table (as `make dev` does) gets
// the records written later, also when other tables are created and
// written meanwhile: DynamoDB Local then answers the empty shard's next
// iterator with TrimmedDataAccessException, and the reader re-reads the
// shard from its trim horizon.
func TestReadFromEmptyStream(t *testing.T) {
	for _, latest := range []bool{false, true} {
		t.Run(fmt.Sprintf("latest=%v", latest), func(t *testing.T) {
			w := newWorld(t)
			arn, err := streampoll.LatestStreamARN(context.Background(), db.Client, w.table)
			require.NoError(t, err)
			r := streampoll.NewStreamReader(streamsClient(), arn, streampoll.StreamReaderOptions{Latest: latest})
			for range 3 {
				batches, err := r.Next(context.Background())
				require.NoError(t, err)
				require.Empty(t, batches)
			}
			var want, got []string
			for i := range 3 {
				other := db.CreateTable(t, schema.APIKeys())
				_, err := db.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(other), Item: map[string]types.AttributeValue{
					schema.AttrKeyHash: &types.AttributeValueMemberS{Value: "h"},
				}})
				require.NoError(t, err)
				_, err = r.Next(context.Background())
				require.NoError(t, err)
				want = append(want, w.post("acme", fmt.Sprintf(`{"event_type":"empty.start","payload":{"i":%d}}`, i), nil))
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					batches, err := r.Next(context.Background())
					require.NoError(c, err)
					for _, b := range batches {
						for _, rec := range b.Event.Records {
							got = append(got, rec.Change.NewImage[schema.AttrEventID].String())
						}
					}
					assert.Len(c, got, len(want), "records read")
				}, 30*time.Second, 20*time.Millisecond) // answered as soon as read
			}
			assert.Equal(t, want, got, "every record once, in order")
		})
	}
}
