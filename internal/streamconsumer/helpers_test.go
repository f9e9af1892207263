package streamconsumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/internal/syncio"
)

const testQueue = "https://sqs.us-east-1.amazonaws.com/123456789012/delivery"

// sent is one message the fake queue accepted.
type sent struct {
	Body      string
	Tenant    string
	EventType string
	QueueURL  string
}

// fakeSQS records SendMessageBatch calls. fail, when set, decides each
// entry's fate per call (1-based); callErr fails whole calls.
type fakeSQS struct {
	mu      sync.Mutex
	calls   [][]string // entry ids per call
	sent    []sent
	fail    func(call int, e sqstypes.SendMessageBatchRequestEntry) *sqstypes.BatchResultErrorEntry
	callErr func(call int) error
	// omit leaves entries out of the result entirely (neither successful
	// nor failed) on the given call.
	omit func(call int, e sqstypes.SendMessageBatchRequestEntry) bool
}

func (f *fakeSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(in.Entries) == 0 || len(in.Entries) > 10 {
		return nil, fmt.Errorf("fake: %d entries", len(in.Entries))
	}
	var ids []string
	for _, e := range in.Entries {
		ids = append(ids, *e.Id)
	}
	f.calls = append(f.calls, ids)
	call := len(f.calls)
	if f.callErr != nil {
		if err := f.callErr(call); err != nil {
			return nil, err
		}
	}
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		if f.omit != nil && f.omit(call, e) {
			continue
		}
		if f.fail != nil {
			if fe := f.fail(call, e); fe != nil {
				fe.Id = e.Id
				out.Failed = append(out.Failed, *fe)
				continue
			}
		}
		f.sent = append(f.sent, sent{
			Body:      aws.ToString(e.MessageBody),
			Tenant:    attr(e, streamconsumer.AttrTenant),
			EventType: attr(e, streamconsumer.AttrEventType),
			QueueURL:  aws.ToString(in.QueueUrl),
		})
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("m" + *e.Id)})
	}
	return out, nil
}

func attr(e sqstypes.SendMessageBatchRequestEntry, name string) string {
	v, ok := e.MessageAttributes[name]
	if !ok || aws.ToString(v.DataType) != "String" {
		return "<missing or not String>"
	}
	return aws.ToString(v.StringValue)
}

// eventIDs returns the event_id of every sent body.
func (f *fakeSQS) eventIDs(t *testing.T) []string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := []string{}
	for _, s := range f.sent {
		var e struct {
			ID string `json:"event_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(s.Body), &e), s.Body)
		ids = append(ids, e.ID)
	}
	return ids
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct{ syncio.Buffer }

// lines returns the decoded JSON log lines. t may be an *assert.CollectT,
// so that lines can run in a require.EventuallyWithT condition (its own
// goroutine, where a *testing.T must not FailNow).
func (l *logBuffer) lines(t require.TestingT) []map[string]any {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q is not JSON", line)
		out = append(out, m)
	}
	return out
}

// newConsumer returns a consumer publishing to out: a streamconsumer.Publisher
// (a sink), or a streamconsumer.Sender (an SQS client or fake, behind
// streamconsumer.SQSPublisher).
func newConsumer(t *testing.T, out any, opts ...func(*streamconsumer.Config)) (*streamconsumer.Consumer, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cfg := streamconsumer.Config{
		QueueURL: testQueue,
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Sleep:    func(context.Context, time.Duration) error { return nil },
	}
	switch o := out.(type) {
	case streamconsumer.Publisher:
		cfg.Publisher = o
	case streamconsumer.Sender:
		cfg.Sender = o
	default:
		t.Fatalf("newConsumer: %T is neither a Publisher nor a Sender", out)
	}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := streamconsumer.New(cfg)
	require.NoError(t, err)
	return c, logs
}

// eventImage is the NEW_IMAGE of an event item as the store writes it.
func eventImage(tenant, id, typ string, payload map[string]events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
	const ts = "2026-11-22T10:00:00.000000Z"
	return map[string]events.DynamoDBAttributeValue{
		"user_id":              events.NewStringAttribute(tenant),
		"timestamp#event_id":   events.NewStringAttribute(ts + "#" + id),
		"event_id":             events.NewStringAttribute(id),
		"event_type":           events.NewStringAttribute(typ),
		"payload":              events.NewMapAttribute(payload),
		"status":               events.NewStringAttribute("received"),
		"timestamp":            events.NewStringAttribute(ts),
		"ttl":                  events.NewNumberAttribute("1800000000"),
		"retry_count":          events.NewNumberAttribute("0"),
		"metadata":             events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"source_ip": events.NewStringAttribute("192.0.2.1"), "api_version": events.NewStringAttribute("v1")}),
		"event_type#timestamp": events.NewStringAttribute(typ + "#" + ts),
		"status#timestamp":     events.NewStringAttribute("received#" + ts),
	}
}

func record(name, seq string, img map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		EventID:        "ev-" + seq,
		EventName:      name,
		EventSource:    "aws:dynamodb",
		EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/events/stream/2026-01-01T00:00:00.000",
		Change: events.DynamoDBStreamRecord{
			SequenceNumber: seq,
			NewImage:       img,
			StreamViewType: "NEW_IMAGE",
		},
	}
}

// insert is an INSERT record of event id "e<seq>" of tenant acme.
func insert(seq string) events.DynamoDBEventRecord {
	return record("INSERT", seq, eventImage("acme", "e"+seq, "user.created", map[string]events.DynamoDBAttributeValue{"n": events.NewNumberAttribute(seq)}))
}

// inserts returns n INSERT records with sequence numbers 101, 102...
func inserts(n int) []events.DynamoDBEventRecord {
	var recs []events.DynamoDBEventRecord
	for i := range n {
		recs = append(recs, insert(fmt.Sprint(101+i)))
	}
	return recs
}

func seqs(resp events.DynamoDBEventResponse) []string {
	out := []string{}
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

func seqRange(from, to int) []string {
	out := []string{}
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

func eventIDRange(from, to int) []string {
	out := []string{}
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint("e", i))
	}
	return out
}
