package streamconsumer_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

func TestNewValidates(t *testing.T) {
	_, err := streamconsumer.New(streamconsumer.Config{QueueURL: testQueue})
	assert.ErrorContains(t, err, "Config.Sender are nil")
	_, err = streamconsumer.New(streamconsumer.Config{Sender: &fakeSQS{}})
	assert.ErrorContains(t, err, "QueueURL is empty")
}

func TestHandleDeliversOnlyInsertedEvents(t *testing.T) {
	idem := record("INSERT", "103", map[string]events.DynamoDBAttributeValue{
		"user_id":            events.NewStringAttribute("idempotency#acme#abc"),
		"timestamp#event_id": events.NewStringAttribute("idempotency"),
		"record_type":        events.NewStringAttribute("idempotency"),
		"event_id":           events.NewStringAttribute("e101"),
	})
	modify := insert("104")
	modify.EventName = "MODIFY"
	remove := insert("105")
	remove.EventName = "REMOVE"
	remove.Change.NewImage = nil
	remove.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"} // TTL deletion
	other := record("INSERT", "106", eventImage("globex", "e106", "order.paid", map[string]events.DynamoDBAttributeValue{}))

	fake := &fakeSQS{}
	c, _ := newConsumer(t, fake)
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{insert("101"), insert("102"), idem, modify, remove, other}})
	require.NoError(t, err)
	assert.Equal(t, events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}, resp)
	assert.Equal(t, []string{"e101", "e102", "e106"}, fake.eventIDs(t))
	require.Len(t, fake.calls, 1, "one SendMessageBatch call")
	for _, s := range fake.sent {
		assert.Equal(t, testQueue, s.QueueURL)
	}
	assert.Equal(t, "acme", fake.sent[0].Tenant)
	assert.Equal(t, "user.created", fake.sent[0].EventType)
	assert.Equal(t, "globex", fake.sent[2].Tenant)
	assert.Equal(t, "order.paid", fake.sent[2].EventType)
	assert.JSONEq(t, `{"event_id":"e106","event_type":"order.paid","payload":{},"status":"received","timestamp":"2026-11-22T10:00:00.000000Z","retry_count":0,"metadata":{"source_ip":"192.0.2.1","api_version":"v1"}}`, fake.sent[2].Body)

	raw, err := json.Marshal(resp)
	require.NoError(t, err)
	assert.JSONEq(t, `{"batchItemFailures":[]}`, string(raw))
}

func TestHandleEmptyBatch(t *testing.T) {
	fake := &fakeSQS{}
	c, _ := newConsumer(t, fake)
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{})
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Empty(t, fake.calls)
}

func senderFault(code string) *sqstypes.BatchResultErrorEntry {
	return &sqstypes.BatchResultErrorEntry{Code: aws.String(code), Message: aws.String("rejected"), SenderFault: true}
}

func serverFault() *sqstypes.BatchResultErrorEntry {
	return &sqstypes.BatchResultErrorEntry{Code: aws.String("InternalError"), Message: aws.String("try again"), SenderFault: false}
}

// TestHandlePartialFailures runs batches of INSERT records 101... against
// queues that fail in various ways and checks what is sent and which
// records are reported (the first failed one and every later one).
func TestHandlePartialFailures(t *testing.T) {
	tests := []struct {
		name         string
		records      int
		fake         *fakeSQS
		wantFailures []string
		wantSent     []string
		wantCalls    [][]string
	}{
		{
			name:         "all sent in chunks of ten",
			records:      23,
			fake:         &fakeSQS{},
			wantFailures: []string{},
			wantSent:     eventIDRange(101, 123),
			wantCalls:    [][]string{{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, {"10", "11", "12", "13", "14", "15", "16", "17", "18", "19"}, {"20", "21", "22"}},
		},
		{
			name:    "permanent entry failure: that record and all later ones, later chunks not sent",
			records: 15,
			fake: &fakeSQS{fail: func(_ int, e sqstypes.SendMessageBatchRequestEntry) *sqstypes.BatchResultErrorEntry {
				if *e.Id == "2" {
					return senderFault("InvalidParameterValue")
				}
				return nil
			}},
			wantFailures: seqRange(103, 115),
			// The rest of the first chunk went out in the same call; it
			// will be sent again on retry (at least once).
			wantSent:  append(eventIDRange(101, 102), eventIDRange(104, 110)...),
			wantCalls: [][]string{{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
		},
		{
			name:    "retryable entry failure retried until sent",
			records: 4,
			fake: &fakeSQS{fail: func(call int, e sqstypes.SendMessageBatchRequestEntry) *sqstypes.BatchResultErrorEntry {
				if call < 3 && (*e.Id == "1" || *e.Id == "3") {
					return serverFault()
				}
				return nil
			}},
			wantFailures: []string{},
			wantSent:     []string{"e101", "e103", "e102", "e104"},
			wantCalls:    [][]string{{"0", "1", "2", "3"}, {"1", "3"}, {"1", "3"}},
		},
		{
			name:    "retryable entry failure that outlasts the attempts",
			records: 12,
			fake: &fakeSQS{fail: func(_ int, e sqstypes.SendMessageBatchRequestEntry) *sqstypes.BatchResultErrorEntry {
				if *e.Id == "4" {
					return serverFault()
				}
				return nil
			}},
			wantFailures: seqRange(105, 112),
			wantSent:     append(eventIDRange(101, 104), eventIDRange(106, 110)...),
			wantCalls:    [][]string{{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, {"4"}, {"4"}},
		},
		{
			name:    "lowest failure wins when a retried entry and a permanent one fail",
			records: 5,
			fake: &fakeSQS{fail: func(call int, e sqstypes.SendMessageBatchRequestEntry) *sqstypes.BatchResultErrorEntry {
				switch {
				case *e.Id == "3":
					return senderFault("InvalidMessageContents")
				case *e.Id == "1":
					return serverFault()
				}
				return nil
			}},
			wantFailures: seqRange(102, 105),
			wantSent:     []string{"e101", "e103", "e105"},
			wantCalls:    [][]string{{"0", "1", "2", "3", "4"}, {"1"}, {"1"}},
		},
		{
			name:    "whole call fails on the second chunk",
			records: 14,
			fake: &fakeSQS{callErr: func(call int) error {
				if call == 2 {
					return errors.New("connection reset")
				}
				return nil
			}},
			wantFailures: seqRange(111, 114),
			wantSent:     eventIDRange(101, 110),
			wantCalls:    [][]string{{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, {"10", "11", "12", "13"}},
		},
		{
			name:    "entry missing from the result is retried",
			records: 3,
			fake: &fakeSQS{omit: func(call int, e sqstypes.SendMessageBatchRequestEntry) bool {
				return call == 1 && *e.Id == "0"
			}},
			wantFailures: []string{},
			wantSent:     []string{"e102", "e103", "e101"},
			wantCalls:    [][]string{{"0", "1", "2"}, {"0"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, logs := newConsumer(t, tt.fake)
			resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: inserts(tt.records)})
			require.NoError(t, err)
			assert.Equal(t, tt.wantFailures, seqs(resp), "BatchItemFailures")
			assert.Equal(t, tt.wantSent, tt.fake.eventIDs(t), "sent")
			assert.Equal(t, tt.wantCalls, tt.fake.calls, "SendMessageBatch calls (entry ids)")
			var errs []map[string]any
			for _, l := range logs.lines(t) {
				if l["level"] == "ERROR" {
					errs = append(errs, l)
				}
			}
			if len(tt.wantFailures) == 0 {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1, "one error line per failed invocation")
			assert.Equal(t, tt.wantFailures[0], errs[0]["sequence_number"])
			assert.Equal(t, testQueue, errs[0]["queue_url"])
			assert.EqualValues(t, len(tt.wantSent), errs[0]["sent"], "sent, in the log")
			assert.EqualValues(t, len(tt.wantFailures), errs[0]["failed_records"])
		})
	}
}

// TestHandleMalformed: a record that can never be delivered is reported
// (with every later record, which is not lost but retried), logged once,
// and the records before it are sent.
func TestHandleMalformed(t *testing.T) {
	good := func(seq string) map[string]events.DynamoDBAttributeValue { return insert(seq).Change.NewImage }
	without := func(name string) map[string]events.DynamoDBAttributeValue {
		img := good("102")
		delete(img, name)
		return img
	}
	with := func(name string, v events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
		img := good("102")
		img[name] = v
		return img
	}
	tests := []struct {
		name  string
		image map[string]events.DynamoDBAttributeValue
		want  string
	}{
		{"no new image (KEYS_ONLY stream)", nil, "without a new image"},
		{"zero attribute value", with("payload", events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"x": {}})), `attribute "payload": map key "x"`},
		{"no event_type", without("event_type"), `"event_type" is missing`},
		{"no event_id", without("event_id"), `"event_id" is missing`},
		{"no user_id", without("user_id"), `"user_id" is missing`},
		{"status a number", with("status", events.NewNumberAttribute("1")), `"status" is missing, empty or not a string`},
		{"payload a list", with("payload", events.NewListAttribute(nil)), `"payload" is missing or not a map`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeSQS{}
			c, logs := newConsumer(t, fake)
			bad := record("INSERT", "102", tt.image)
			resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{insert("101"), bad, insert("103"), insert("104")}})
			require.NoError(t, err)
			assert.Equal(t, []string{"102", "103", "104"}, seqs(resp))
			assert.Equal(t, []string{"e101"}, fake.eventIDs(t))

			var errs []map[string]any
			for _, l := range logs.lines(t) {
				if l["level"] == "ERROR" {
					errs = append(errs, l)
				}
			}
			require.Len(t, errs, 1, "logged once")
			assert.Contains(t, errs[0]["msg"], "malformed")
			assert.Equal(t, "102", errs[0]["sequence_number"])
			assert.Equal(t, "INSERT", errs[0]["event_name"])
			assert.Contains(t, errs[0]["error"], tt.want)

			// Decide says the same, with ErrMalformed.
			_, _, err = streamconsumer.Decide(bad)
			assert.ErrorIs(t, err, streamconsumer.ErrMalformed)
		})
	}

	t.Run("first record malformed: nothing sent", func(t *testing.T) {
		fake := &fakeSQS{}
		c, _ := newConsumer(t, fake)
		resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record("INSERT", "101", nil), insert("102")}})
		require.NoError(t, err)
		assert.Equal(t, []string{"101", "102"}, seqs(resp))
		assert.Empty(t, fake.calls)
	})

	t.Run("idempotency record with an odd image is skipped, not malformed", func(t *testing.T) {
		fake := &fakeSQS{}
		c, _ := newConsumer(t, fake)
		odd := record("INSERT", "101", map[string]events.DynamoDBAttributeValue{"user_id": events.NewStringAttribute("idempotency#acme#x"), "weird": {}})
		resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{odd, insert("102")}})
		require.NoError(t, err)
		assert.Empty(t, seqs(resp))
		assert.Equal(t, []string{"e102"}, fake.eventIDs(t))
	})
}

func TestHandleFailedRecordWithoutSequenceNumber(t *testing.T) {
	c, _ := newConsumer(t, &fakeSQS{})
	bad := record("INSERT", "", nil)
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{insert("101"), bad}})
	assert.ErrorContains(t, err, "no sequence number")
	assert.Equal(t, []string{""}, seqs(resp))
}

// TestHandleBatchBytes: chunks respect the byte budget; a message larger
// than the budget goes alone.
func TestHandleBatchBytes(t *testing.T) {
	big := func(seq string, n int) events.DynamoDBEventRecord {
		return record("INSERT", seq, eventImage("acme", "e"+seq, "t", map[string]events.DynamoDBAttributeValue{"s": events.NewStringAttribute(strings.Repeat("x", n))}))
	}
	fake := &fakeSQS{}
	c, _ := newConsumer(t, fake, func(cfg *streamconsumer.Config) { cfg.MaxBatchBytes = 2000 })
	recs := []events.DynamoDBEventRecord{big("101", 600), big("102", 600), big("103", 600), big("104", 5000), big("105", 10)}
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	assert.Empty(t, seqs(resp))
	assert.Equal(t, [][]string{{"0", "1"}, {"2"}, {"3"}, {"4"}}, fake.calls)
	assert.Equal(t, eventIDRange(101, 105), fake.eventIDs(t))
}

// TestHandleCanceledContext: a retry cut short by the context fails the
// record instead of sleeping past the function's deadline.
func TestHandleCanceledContext(t *testing.T) {
	fake := &fakeSQS{fail: func(_ int, e sqstypes.SendMessageBatchRequestEntry) *sqstypes.BatchResultErrorEntry {
		if *e.Id == "1" {
			return serverFault()
		}
		return nil
	}}
	c, _ := newConsumer(t, fake, func(cfg *streamconsumer.Config) {
		cfg.Sleep = func(ctx context.Context, _ time.Duration) error { return context.DeadlineExceeded }
	})
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: inserts(3)})
	require.NoError(t, err)
	assert.Equal(t, []string{"102", "103"}, seqs(resp))
	assert.Len(t, fake.calls, 1)
}

func TestMarshalEvent(t *testing.T) {
	e := event.Event{
		ID: "id1", Type: "a.b", Status: event.Received, Timestamp: "2026-11-22T10:00:00.000000Z",
		Payload:  eventtest.PayloadOf(t, map[string]any{"html": "<a href='x'>&</a>", "nonchar": "a\uffffb\ufffe", "line": "\u2028", "n": json.Number("1e400")}),
		Metadata: event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1"}, TTL: 99,
	}
	b, err := streamconsumer.MarshalEvent(e)
	require.NoError(t, err)
	s := string(b)
	assert.Contains(t, s, `"html":"<a href='x'>&</a>"`, "no HTML escaping, like the API")
	assert.Contains(t, s, `"nonchar":"a\uffffb\ufffe"`, "noncharacters escaped for SQS")
	assert.NotContains(t, s, "\uffff")
	assert.Contains(t, s, `"n":1e400`, "numbers keep their digits")
	assert.NotContains(t, s, "ttl")
	assert.False(t, strings.HasSuffix(s, "\n"))

	var back map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&back))
	assert.Equal(t, "a\uffffb\ufffe", back["payload"].(map[string]any)["nonchar"])

	b, err = streamconsumer.MarshalEvent(event.Event{ID: "x"})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"payload":{}`, "a nil payload is an empty object")
}

// parked records what a DeadLetter received.
type parked struct {
	records []json.RawMessage
	reasons []string
	fail    error
}

func (p *parked) Park(_ context.Context, record json.RawMessage, reason string) error {
	if p.fail != nil {
		return p.fail
	}
	p.records = append(p.records, record)
	p.reasons = append(p.reasons, reason)
	return nil
}

// With a dead-letter destination a malformed record is parked with its
// content and the shard moves past it: the records after it are sent in
// the same invocation and nothing is reported. When parking fails the
// record is a batch item failure as without one.
func TestMalformedRecordsAreParked(t *testing.T) {
	fake := &fakeSQS{}
	dead := &parked{}
	c, logs := newConsumer(t, fake, func(cfg *streamconsumer.Config) { cfg.DeadLetter = dead })
	bad := record("INSERT", "102", nil)
	payload, err := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{insert("101"), bad, insert("103")}})
	require.NoError(t, err)
	// One record aws-lambda-go cannot decode, through HandleJSON: parked
	// byte for byte.
	var env struct {
		Records []json.RawMessage `json:"Records"`
	}
	require.NoError(t, json.Unmarshal(payload, &env))
	undecodable := json.RawMessage(`{"eventID":"x","eventName":"INSERT","dynamodb":{"SequenceNumber":"104","NewImage":{"a":{"Q":"?"}}}}`)
	env.Records = append(env.Records, undecodable, json.RawMessage(mustJSON(t, insert("105"))))
	all, err := json.Marshal(env)
	require.NoError(t, err)

	resp, err := c.HandleJSON(context.Background(), all)
	require.NoError(t, err)
	assert.Empty(t, seqs(resp), "nothing to retry: the shard moves on")
	assert.Equal(t, []string{"e101", "e103", "e105"}, fake.eventIDs(t))
	require.Len(t, dead.records, 2)
	assert.JSONEq(t, string(env.Records[1]), string(dead.records[0]), "the record's content")
	assert.Equal(t, string(undecodable), string(dead.records[1]), "byte for byte")
	assert.Contains(t, dead.reasons[0], "without a new image")
	assert.Contains(t, dead.reasons[1], "cannot decode the record")
	warns := 0
	for _, l := range logs.lines(t) {
		if l["msg"] == "malformed stream record parked in the dead-letter queue" {
			warns++
		}
	}
	assert.Equal(t, 2, warns)

	dead.fail = errors.New("queue gone")
	fake = &fakeSQS{}
	c, _ = newConsumer(t, fake, func(cfg *streamconsumer.Config) { cfg.DeadLetter = dead })
	resp, err = c.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{insert("101"), bad, insert("103")}})
	require.NoError(t, err)
	assert.Equal(t, []string{"102", "103"}, seqs(resp), "not parked: retried")
	assert.Equal(t, []string{"e101"}, fake.eventIDs(t))
}

// A record aws-lambda-go cannot encode (an attribute value whose content
// does not match its type, which only Go code can make) cannot be parked
// with its content: it is a batch item failure, not a panic.
func TestUnencodableRecordIsNotParked(t *testing.T) {
	fake := &fakeSQS{}
	dead := &parked{}
	c, logs := newConsumer(t, fake, func(cfg *streamconsumer.Config) { cfg.DeadLetter = dead })
	img := eventImage("acme", "e102", "t.x", nil)
	img["x"] = events.DynamoDBAttributeValue{} // binary without content
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{insert("101"), record("INSERT", "102", img), insert("103")}})
	require.NoError(t, err)
	assert.Equal(t, []string{"102", "103"}, seqs(resp))
	assert.Equal(t, []string{"e101"}, fake.eventIDs(t))
	assert.Empty(t, dead.records)
	assert.Contains(t, logs.String(), "encode the stream record")

	_, err = streamconsumer.MarshalRecord(record("INSERT", "102", img))
	assert.ErrorContains(t, err, "encode the stream record")
	raw, err := streamconsumer.MarshalRecord(insert("101"))
	require.NoError(t, err)
	assert.JSONEq(t, string(mustJSON(t, insert("101"))), string(raw))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

type httpDoer func(*http.Request) (*http.Response, error)

func (f httpDoer) Do(r *http.Request) (*http.Response, error) { return f(r) }

// SQSDeadLetter sends one message per record, {"reason","record"}, through
// the real SDK serializers.
func TestSQSDeadLetter(t *testing.T) {
	var got struct {
		QueueURL    string `json:"QueueUrl"`
		MessageBody string `json:"MessageBody"`
	}
	client := sqs.New(sqs.Options{
		Region: "us-east-1", Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1,
		HTTPClient: httpDoer(func(r *http.Request) (*http.Response, error) {
			assert.Equal(t, "AmazonSQS.SendMessage", r.Header.Get("X-Amz-Target"))
			require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
			sum := md5.Sum([]byte(got.MessageBody)) // the SDK checks it
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
				Body: io.NopCloser(strings.NewReader(`{"MessageId":"m1","MD5OfMessageBody":"` + hex.EncodeToString(sum[:]) + `"}`)), Request: r}, nil
		}),
	})
	d := streamconsumer.SQSDeadLetter{Client: client, QueueURL: "https://sqs.us-east-1.amazonaws.com/1/malformed"}
	require.NoError(t, d.Park(context.Background(), json.RawMessage(`{"eventID":"e1"}`), "bad record"))
	assert.Equal(t, d.QueueURL, got.QueueURL)
	assert.JSONEq(t, `{"reason":"bad record","record":{"eventID":"e1"}}`, got.MessageBody)
}

// sizedQueue is a DeadLetterSender that adds a message attribute to each
// message, as triggers-replay's does, and refuses one whose body and
// attributes together pass SQS's limit, as SQS does.
type sizedQueue struct{ bodies []string }

func (q *sizedQueue) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	const attr = len("triggers_replay_run") + len("String") + 26
	if len(aws.ToString(in.MessageBody))+attr > streamconsumer.DefaultQueueMessageBytes {
		return nil, errors.New("InvalidParameterValue: message must be shorter than 262144 bytes")
	}
	q.bodies = append(q.bodies, aws.ToString(in.MessageBody))
	return &sqs.SendMessageOutput{MessageId: aws.String("m1")}, nil
}

// A record whose message fits the queue's limit by a few bytes, but not
// once the attributes its sender adds count too, is parked without its
// images all the same (AttributeBytes), not refused on every try.
func TestSQSDeadLetterLeavesRoomForAttributes(t *testing.T) {
	img := map[string]events.DynamoDBAttributeValue{"blob": events.NewStringAttribute("")}
	rec, err := streamconsumer.MarshalRecord(record("REMOVE", "7", img))
	require.NoError(t, err)
	overhead := len(`{"reason":"bad","record":}`) + len(rec)
	img["blob"] = events.NewStringAttribute(strings.Repeat("x", streamconsumer.DefaultQueueMessageBytes-overhead-10))
	rec, err = streamconsumer.MarshalRecord(record("REMOVE", "7", img))
	require.NoError(t, err)
	require.LessOrEqual(t, len(`{"reason":"bad","record":}`)+len(rec), streamconsumer.DefaultQueueMessageBytes, "the body alone fits")

	q := &sizedQueue{}
	require.Error(t, streamconsumer.SQSDeadLetter{Client: q, QueueURL: "q"}.Park(context.Background(), rec, "bad"), "the sender's attributes not declared")
	require.NoError(t, streamconsumer.SQSDeadLetter{Client: q, QueueURL: "q", AttributeBytes: 1 << 10}.Park(context.Background(), rec, "bad"))
	require.Len(t, q.bodies, 1)
	assert.Contains(t, q.bodies[0], "too large for the queue: parked without its images")
	assert.NotContains(t, q.bodies[0], "xxxx")
}
