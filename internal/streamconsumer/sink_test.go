package streamconsumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

func TestWriterSink(t *testing.T) {
	var out bytes.Buffer
	c, _ := newConsumer(t, streampoll.WriterSink(&out))
	recs := inserts(2)
	recs[1] = record("INSERT", "102", eventImage("globex", "e102", "order.paid", map[string]events.DynamoDBAttributeValue{"html": events.NewStringAttribute("<&>")}))
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)

	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 2, "one JSON line per delivered event: %q", out.String())
	assert.JSONEq(t, `{"tenant":"acme","event_type":"user.created","event":{"event_id":"e101","event_type":"user.created","payload":{"n":101},"status":"received","timestamp":"2026-11-22T10:00:00.000000Z","retry_count":0,"metadata":{"source_ip":"192.0.2.1","api_version":"v1"}}}`, lines[0])
	assert.Contains(t, lines[1], `"tenant":"globex"`)
	assert.Contains(t, lines[1], `"html":"<&>"`, "no HTML escaping")
}

func TestSinkFunc(t *testing.T) {
	var got []streamconsumer.Message
	calls := 0
	sink := streampoll.SinkFunc(func(_ context.Context, m streamconsumer.Message) error {
		calls++
		if m.EventID == "e102" && calls < 4 {
			return errors.New("local sink busy")
		}
		got = append(got, m)
		return nil
	})
	c, _ := newConsumer(t, sink)
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: inserts(3)})
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "the sink's error is retryable and the retry succeeds")
	require.Len(t, got, 3)
	assert.Equal(t, []string{"e101", "e103", "e102"}, []string{got[0].EventID, got[1].EventID, got[2].EventID})
	assert.Equal(t, "acme", got[0].Tenant)
	assert.Equal(t, "user.created", got[0].EventType)
	assert.True(t, json.Valid(got[0].Body))

	// Like SQS, a sink takes 1 to 10 messages per call; a failed message
	// is retryable.
	_, err = sink.Publish(context.Background(), nil)
	assert.ErrorContains(t, err, "0 messages")
	errs, err := sink.Publish(context.Background(), []streamconsumer.Entry{{ID: "0", Message: streamconsumer.Message{EventID: "e9", Body: []byte("{}")}}})
	require.NoError(t, err)
	assert.Equal(t, []error{nil}, errs)
	calls = 0
	errs, err = sink.Publish(context.Background(), []streamconsumer.Entry{{ID: "0", Message: streamconsumer.Message{EventID: "e102", Body: []byte("{}")}}})
	require.NoError(t, err)
	assert.ErrorIs(t, errs[0], streamconsumer.ErrRetryable)
}

// streamRecordJSON is one INSERT record in the JSON form Lambda sends;
// newImage is spliced in verbatim.
func streamRecordJSON(seq, newImage string) string {
	return `{"eventID":"id-` + seq + `","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1",
	 "dynamodb":{"ApproximateCreationDateTime":1795386540,"Keys":{"user_id":{"S":"acme"}},"NewImage":` + newImage + `,
	  "SequenceNumber":"` + seq + `","SizeBytes":400,"StreamViewType":"NEW_IMAGE"},
	 "eventSourceARN":"arn:aws:dynamodb:eu-west-1:123456789012:table/events/stream/2026-01-01T00:00:00.000"}`
}

func eventImageJSON(id, payload string) string {
	return `{"user_id":{"S":"acme"},"timestamp#event_id":{"S":"2026-11-22T10:00:00.000000Z#` + id + `"},"event_id":{"S":"` + id + `"},"event_type":{"S":"user.created"},
	   "payload":` + payload + `,"status":{"S":"received"},"timestamp":{"S":"2026-11-22T10:00:00.000000Z"},"ttl":{"N":"1797978553"},"retry_count":{"N":"0"},
	   "metadata":{"M":{"source_ip":{"S":"192.0.2.1"},"api_version":{"S":"v1"},"correlation_id":{"S":"c-1"}}},
	   "event_type#timestamp":{"S":"user.created#2026-11-22T10:00:00.000000Z"},"status#timestamp":{"S":"received#2026-11-22T10:00:00.000000Z"}}`
}

// TestLambdaHandlerJSON invokes the handler main registers the way the
// Lambda runtime does (lambda.NewHandler, JSON in and out), with stream
// events in the JSON form Lambda sends.
func TestLambdaHandlerJSON(t *testing.T) {
	const full = `{"M":{"big":{"N":"123456789012345678901234567890"},"name":{"S":"Zoë"},"tags":{"L":[{"S":"a"},{"NULL":true}]},"empty":{"M":{}}}}`
	tests := []struct {
		name         string
		records      []string
		wantResponse string
		wantSent     []string
		wantLog      string // in the one ERROR line, if any
	}{
		{
			name:         "one event",
			records:      []string{streamRecordJSON("4421584500000000017450439091", eventImageJSON("e1", full))},
			wantResponse: `{"batchItemFailures":[]}`,
			wantSent:     []string{`{"event_id":"e1","event_type":"user.created","payload":{"big":123456789012345678901234567890,"empty":{},"name":"Zoë","tags":["a",null]},"status":"received","timestamp":"2026-11-22T10:00:00.000000Z","retry_count":0,"metadata":{"source_ip":"192.0.2.1","api_version":"v1","correlation_id":"c-1"}}`},
		},
		{
			name: "a record aws-lambda-go cannot decode is malformed, the batch still runs",
			records: []string{
				streamRecordJSON("11", eventImageJSON("e1", `{"M":{}}`)),
				streamRecordJSON("12", eventImageJSON("e2", `{"M":{"x":{"FUTURE":"1"}}}`)),
				streamRecordJSON("13", eventImageJSON("e3", `{"M":{}}`)),
			},
			wantResponse: `{"batchItemFailures":[{"itemIdentifier":"12"},{"itemIdentifier":"13"}]}`,
			wantSent:     []string{`{"event_id":"e1","event_type":"user.created","payload":{},"status":"received","timestamp":"2026-11-22T10:00:00.000000Z","retry_count":0,"metadata":{"source_ip":"192.0.2.1","api_version":"v1","correlation_id":"c-1"}}`},
			wantLog:      "cannot decode the record",
		},
		{
			name:         "no records",
			records:      nil,
			wantResponse: `{"batchItemFailures":[]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeSQS{}
			c, logs := newConsumer(t, fake)
			in := `{"Records":[` + strings.Join(tt.records, ",") + `]}`
			out, err := lambda.NewHandler(c.HandleJSON).Invoke(context.Background(), []byte(in))
			require.NoError(t, err)
			assert.JSONEq(t, tt.wantResponse, string(out))
			var bodies []string
			for _, m := range fake.sent {
				bodies = append(bodies, m.Body)
				assert.Equal(t, "acme", m.Tenant)
				assert.Equal(t, "user.created", m.EventType)
			}
			assert.Equal(t, tt.wantSent, bodies)
			var errs []map[string]any
			for _, l := range logs.lines(t) {
				if l["level"] == "ERROR" {
					errs = append(errs, l)
				}
			}
			if tt.wantLog == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Contains(t, errs[0]["error"], tt.wantLog)
			assert.Equal(t, "12", errs[0]["sequence_number"])
			assert.Equal(t, "id-12", errs[0]["stream_event_id"])
		})
	}

	c, _ := newConsumer(t, &fakeSQS{})
	_, err := c.HandleJSON(context.Background(), json.RawMessage(`[1,2]`))
	assert.ErrorContains(t, err, "decode DynamoDB stream event")
}
