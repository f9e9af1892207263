package streamconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

// chunkRecorder is a Publisher that keeps every call's entries; entries
// whose id is in fail fail for good.
type chunkRecorder struct {
	calls [][]streamconsumer.Entry
	fail  map[string]bool
}

func (c *chunkRecorder) Publish(_ context.Context, entries []streamconsumer.Entry) ([]error, error) {
	c.calls = append(c.calls, append([]streamconsumer.Entry(nil), entries...))
	errs := make([]error, len(entries))
	for i, e := range entries {
		if c.fail[e.ID] {
			errs[i] = errors.New("refused")
		}
	}
	return errs, nil
}

func (c *chunkRecorder) ids() [][]string {
	var out [][]string
	for _, call := range c.calls {
		var ids []string
		for _, e := range call {
			ids = append(ids, e.ID)
		}
		out = append(out, ids)
	}
	return out
}

// sqsSize is a message's size as SQS counts it against a batch's limit:
// the body plus, for each message attribute, its name, its data type
// ("String") and its value.
func sqsSize(m streamconsumer.Message) int {
	return len(m.Body) + len(streamconsumer.AttrTenant) + len("String") + len(m.Tenant) + len(streamconsumer.AttrEventType) + len("String") + len(m.EventType)
}

// A chunk takes messages while their summed SQS size stays within the
// budget: exactly at the budget they share a call, one byte over they do
// not.
func TestChunksFillTheByteBudgetExactly(t *testing.T) {
	recs := []events.DynamoDBEventRecord{
		record("INSERT", "101", eventImage("acme", "e1", "type.a.long", nil)),
		record("INSERT", "102", eventImage("tenant-bbb", "e2", "b", nil)),
		record("INSERT", "103", eventImage("c", "e3", "c", nil)),
	}
	probe := &chunkRecorder{}
	c, _ := newConsumer(t, probe)
	_, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	require.Len(t, probe.calls, 1)
	var sizes []int
	for _, e := range probe.calls[0] {
		sizes = append(sizes, sqsSize(e.Message))
	}
	// The attributes count: the sizes differ from the bodies' lengths by
	// more than the bodies differ.
	require.NotEqual(t, sizes[0]-len(probe.calls[0][0].Body), sizes[1]-len(probe.calls[0][1].Body))
	require.Less(t, sizes[2], sizes[0], "the last message is the smallest")

	for _, tc := range []struct {
		budget int
		want   [][]string
	}{
		{sizes[0] + sizes[1], [][]string{{"0", "1"}, {"2"}}},
		{sizes[0] + sizes[1] - 1, [][]string{{"0"}, {"1", "2"}}},
		{sizes[0] + sizes[1] + sizes[2], [][]string{{"0", "1", "2"}}},
		{sizes[0] + sizes[1] + sizes[2] - 1, [][]string{{"0", "1"}, {"2"}}},
	} {
		rec := &chunkRecorder{}
		c, _ := newConsumer(t, rec, func(cfg *streamconsumer.Config) { cfg.MaxBatchBytes = tc.budget })
		resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: recs})
		require.NoError(t, err)
		assert.Empty(t, seqs(resp))
		assert.Equal(t, tc.want, rec.ids(), "budget %d (sizes %v)", tc.budget, sizes)
	}
}

// At most MaxBatchEntries messages share a call, whatever the budget.
func TestChunksHoldAtMostTenMessages(t *testing.T) {
	rec := &chunkRecorder{}
	c, _ := newConsumer(t, rec)
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: inserts(21)})
	require.NoError(t, err)
	assert.Empty(t, seqs(resp))
	var lens []int
	for _, call := range rec.calls {
		lens = append(lens, len(call))
	}
	assert.Equal(t, []int{streamconsumer.MaxBatchEntries, streamconsumer.MaxBatchEntries, 1}, lens)
}

// The batch's summary log line counts what happened: records, sent, and
// the records handed back to Lambda (from the first failure on).
func TestBatchSummaryLog(t *testing.T) {
	rec := &chunkRecorder{fail: map[string]bool{"3": true}}
	c, logs := newConsumer(t, rec)
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: inserts(5)})
	require.NoError(t, err)
	assert.Len(t, seqs(resp), 2, "records 3 and 4 go back to Lambda")
	var found bool
	for _, l := range logs.lines(t) {
		if l["msg"] != "stream batch processed" {
			continue
		}
		found = true
		assert.Equal(t, float64(5), l["records"])
		assert.Equal(t, float64(4), l["sent"], "every message but the failed one was sent")
		assert.Equal(t, float64(2), l["failed_records"])
	}
	assert.True(t, found, "no summary line in %s", logs.String())
	for _, l := range logs.lines(t) {
		if l["msg"] == "cannot send events to the delivery queue: Lambda retries from the first failed record" {
			assert.Equal(t, float64(2), l["failed_records"])
			assert.Equal(t, float64(4), l["sent"])
		}
	}
}

// Stream images nest at most 64 levels, in maps and lists alike.
func TestNestingLimitBoundary(t *testing.T) {
	wrap := map[string]func(events.DynamoDBAttributeValue) events.DynamoDBAttributeValue{
		"list": func(v events.DynamoDBAttributeValue) events.DynamoDBAttributeValue {
			return events.NewListAttribute([]events.DynamoDBAttributeValue{v})
		},
		"map": func(v events.DynamoDBAttributeValue) events.DynamoDBAttributeValue {
			return events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"k": v})
		},
	}
	for name, w := range wrap {
		v := events.NewNullAttribute()
		for range 64 {
			v = w(v)
		}
		_, err := streamconsumer.AttributeValue(v)
		assert.NoError(t, err, "%s: 64 levels", name)
		_, err = streamconsumer.AttributeValue(w(v))
		assert.ErrorContains(t, err, fmt.Sprintf("attribute value nested deeper than %d levels", 64), "%s: 65 levels", name)
	}
}
