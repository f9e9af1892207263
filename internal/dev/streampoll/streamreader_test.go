package streampoll_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/streampoll"
)

// fakeStreams is a DynamoDB Streams API with scripted shards. Iterators
// are "shard|position".
type fakeStreams struct {
	pages   [][]streamtypes.Shard
	records map[string][]string // shard -> sequence numbers
	closed  map[string]bool     // shard ends after its records
	expire  map[string]bool     // next GetRecords on the shard fails once
	trimmed map[string]int      // the next n GetRecords on the shard fail as trimmed
	created time.Time           // every record's ApproximateCreationDateTime, if set
	iters   []string            // GetShardIterator calls: shard:type:seq
	// horizon is the index of a shard's oldest record still in the
	// stream: the ones before it aged out. GetRecords before it fails as
	// trimmed; so does GetShardIterator at or after an aged-out sequence
	// number when trimIterators is set (else it hands out an iterator that
	// GetRecords refuses).
	horizon       map[string]int
	trimIterators bool
}

func (f *fakeStreams) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	page := 0
	if in.ExclusiveStartShardId != nil {
		page, _ = strconv.Atoi(strings.TrimPrefix(*in.ExclusiveStartShardId, "page"))
	}
	d := &streamtypes.StreamDescription{Shards: f.pages[page], StreamArn: in.StreamArn}
	if page+1 < len(f.pages) {
		d.LastEvaluatedShardId = aws.String(fmt.Sprint("page", page+1))
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: d}, nil
}

func (f *fakeStreams) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	shard := *in.ShardId
	f.iters = append(f.iters, shard+":"+string(in.ShardIteratorType)+":"+aws.ToString(in.SequenceNumber))
	recs := f.records[shard]
	pos := 0
	switch in.ShardIteratorType {
	case streamtypes.ShardIteratorTypeTrimHorizon:
		pos = f.horizon[shard]
	case streamtypes.ShardIteratorTypeLatest:
		pos = len(recs)
	case streamtypes.ShardIteratorTypeAtSequenceNumber, streamtypes.ShardIteratorTypeAfterSequenceNumber:
		pos = -1
		for i, s := range recs {
			if s == *in.SequenceNumber {
				pos = i
			}
		}
		if pos < 0 {
			return nil, fmt.Errorf("no sequence number %s", *in.SequenceNumber)
		}
		if f.trimIterators && pos < f.horizon[shard] {
			return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("trimmed")}
		}
		if in.ShardIteratorType == streamtypes.ShardIteratorTypeAfterSequenceNumber {
			pos++
		}
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprint(shard, "|", pos))}, nil
}

func (f *fakeStreams) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	shard, p, _ := strings.Cut(*in.ShardIterator, "|")
	if f.expire[shard] {
		delete(f.expire, shard)
		return nil, &streamtypes.ExpiredIteratorException{Message: aws.String("expired")}
	}
	if f.trimmed[shard] > 0 {
		f.trimmed[shard]--
		return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("trimmed")}
	}
	pos, _ := strconv.Atoi(p)
	if pos < f.horizon[shard] {
		return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("trimmed")}
	}
	recs := f.records[shard]
	end := min(pos+int(aws.ToInt32(in.Limit)), len(recs))
	out := &dynamodbstreams.GetRecordsOutput{}
	for _, seq := range recs[pos:end] {
		out.Records = append(out.Records, streamtypes.Record{
			EventID:   aws.String("ev" + seq),
			EventName: streamtypes.OperationTypeInsert,
			Dynamodb: &streamtypes.StreamRecord{
				SequenceNumber: aws.String(seq),
				NewImage:       map[string]streamtypes.AttributeValue{"k": &streamtypes.AttributeValueMemberS{Value: seq}},
				StreamViewType: streamtypes.StreamViewTypeNewImage,
			},
		})
		if !f.created.IsZero() {
			out.Records[len(out.Records)-1].Dynamodb.ApproximateCreationDateTime = aws.Time(f.created)
		}
	}
	if !(f.closed[shard] && end == len(recs)) {
		out.NextShardIterator = aws.String(fmt.Sprint(shard, "|", end))
	}
	return out, nil
}

// round returns "shard:seq,seq" per batch of one Next call.
func round(t *testing.T, r *streampoll.StreamReader) []string {
	t.Helper()
	batches, err := r.Next(context.Background())
	require.NoError(t, err)
	out := []string{}
	for _, b := range batches {
		var s []string
		for _, rec := range b.Event.Records {
			s = append(s, rec.Change.SequenceNumber)
			assert.Equal(t, "arn:stream", rec.EventSourceArn)
			assert.Equal(t, rec.Change.SequenceNumber, rec.Change.NewImage["k"].String())
		}
		out = append(out, b.ShardID+":"+strings.Join(s, ","))
	}
	return out
}

// TestStreamReaderShards: a child shard is read only after its parent is
// exhausted; shard lists are paginated; an expired iterator is renewed
// after the last record read; Rewind and SkipPast reposition a shard.
func TestStreamReaderShards(t *testing.T) {
	f := &fakeStreams{
		pages: [][]streamtypes.Shard{
			{{ShardId: aws.String("a")}},
			{{ShardId: aws.String("b"), ParentShardId: aws.String("a")}},
		},
		records: map[string][]string{"a": {"1", "2"}, "b": {"3", "4"}},
		closed:  map[string]bool{"a": true},
		expire:  map[string]bool{},
	}
	r := streampoll.NewStreamReader(f, "arn:stream", streampoll.StreamReaderOptions{Limit: 1})
	assert.Equal(t, []string{"a:1"}, round(t, r), "the child waits for its parent")
	assert.Equal(t, []string{"a:2", "b:3"}, round(t, r))
	assert.Equal(t, []string{"b:4"}, round(t, r))
	assert.Equal(t, []string{}, round(t, r), "nothing new")

	f.expire["b"] = true
	f.records["b"] = append(f.records["b"], "5")
	assert.Equal(t, []string{}, round(t, r), "expired iterator: dropped")
	assert.Equal(t, []string{"b:5"}, round(t, r), "renewed after the last record read")
	assert.Contains(t, f.iters, "b:AFTER_SEQUENCE_NUMBER:4")

	require.NoError(t, r.Rewind(context.Background(), "b", "3"))
	f.expire["b"] = true
	assert.Equal(t, []string{}, round(t, r), "expired again")
	assert.Equal(t, []string{"b:3"}, round(t, r), "renewed where Rewind pointed")
	require.NoError(t, r.SkipPast(context.Background(), "b", "4"))
	assert.Equal(t, []string{"b:5"}, round(t, r))
	assert.ErrorContains(t, r.Rewind(context.Background(), "zz", "1"), "unknown shard")
}

// TestStreamReaderLatest: LATEST applies to the shards that exist at the
// first read; a shard that appears later is read from its start.
func TestStreamReaderLatest(t *testing.T) {
	f := &fakeStreams{
		pages:   [][]streamtypes.Shard{{{ShardId: aws.String("a")}}},
		records: map[string][]string{"a": {"1", "2"}},
		closed:  map[string]bool{},
		expire:  map[string]bool{},
	}
	r := streampoll.NewStreamReader(f, "arn:stream", streampoll.StreamReaderOptions{Latest: true})
	assert.Equal(t, []string{}, round(t, r))
	f.records["a"] = append(f.records["a"], "3")
	f.pages[0] = append(f.pages[0], streamtypes.Shard{ShardId: aws.String("b"), ParentShardId: aws.String("a")})
	f.records["b"] = []string{"4"}
	f.closed["a"] = true
	assert.Equal(t, []string{"a:3", "b:4"}, round(t, r))
	assert.Equal(t, []string{"a:LATEST:", "b:TRIM_HORIZON:"}, f.iters)
}

// TestStreamReaderTrimmed: a TrimmedDataAccessException renews the
// iterator after the last record read; a second one in a row, or one
// before any record was read, starts the shard over at TRIM_HORIZON.
func TestStreamReaderTrimmed(t *testing.T) {
	f := &fakeStreams{
		pages:   [][]streamtypes.Shard{{{ShardId: aws.String("a")}}},
		records: map[string][]string{"a": {"1", "2"}},
		closed:  map[string]bool{},
		expire:  map[string]bool{},
		trimmed: map[string]int{"a": 1},
	}
	r := streampoll.NewStreamReader(f, "arn:stream", streampoll.StreamReaderOptions{Latest: true})
	assert.Equal(t, []string{}, round(t, r), "trimmed before any record: dropped")
	assert.Equal(t, []string{"a:1,2"}, round(t, r), "started over from the oldest record, not LATEST")
	assert.Equal(t, []string{"a:LATEST:", "a:TRIM_HORIZON:"}, f.iters)

	f.records["a"] = append(f.records["a"], "3")
	f.trimmed["a"] = 1
	assert.Equal(t, []string{}, round(t, r))
	assert.Equal(t, []string{"a:3"}, round(t, r), "renewed after the last record read")
	assert.Equal(t, "a:AFTER_SEQUENCE_NUMBER:2", f.iters[len(f.iters)-1])

	f.records["a"] = append(f.records["a"], "4")
	f.trimmed["a"] = 2
	assert.Equal(t, []string{}, round(t, r))
	assert.Equal(t, []string{}, round(t, r), "trimmed again after renewing")
	assert.Equal(t, []string{"a:4"}, round(t, r), "over from the trim horizon, past the records read before")
	assert.Equal(t, []string{"a:AFTER_SEQUENCE_NUMBER:3", "a:TRIM_HORIZON:"}, f.iters[len(f.iters)-2:])
	assert.Empty(t, r.Lost(), "the stream still had record 3: nothing aged out")

	// The same when the shard ends with the records read before.
	f.trimmed["a"], f.closed["a"] = 2, true
	for range 3 {
		assert.Equal(t, []string{}, round(t, r))
	}
	assert.Equal(t, "a:TRIM_HORIZON:", f.iters[len(f.iters)-1])
	assert.Empty(t, r.Lost(), "the shard ended after record 4, which the stream still had")
}

// TestStreamReaderReportsLostRecords: records that aged out of the stream
// before the reader read them (its position is behind the trim horizon)
// are reported: a LOST FROM THE STREAM log line and Lost name the shard
// and the sequence numbers around the gap. The reader goes on from the
// oldest record still there, without handing out again the records it
// read before. Both ways DynamoDB Streams may refuse the position: a
// GetShardIterator that fails as trimmed, or an iterator whose GetRecords
// does.
func TestStreamReaderReportsLostRecords(t *testing.T) {
	for _, trimIterators := range []bool{false, true} {
		t.Run(fmt.Sprintf("trimIterators=%v", trimIterators), func(t *testing.T) {
			f := &fakeStreams{
				pages:   [][]streamtypes.Shard{{{ShardId: aws.String("a")}}},
				records: map[string][]string{"a": {"1", "2", "3", "4", "5", "6"}},
				closed:  map[string]bool{}, expire: map[string]bool{}, trimmed: map[string]int{},
				horizon: map[string]int{}, trimIterators: trimIterators,
			}
			var logs strings.Builder
			r := streampoll.NewStreamReader(f, "arn:stream", streampoll.StreamReaderOptions{Limit: 2, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			assert.Equal(t, []string{"a:1,2"}, round(t, r))
			f.horizon["a"] = 4 // records 3 and 4 age out unread
			var got []string
			for range 4 {
				got = append(got, round(t, r)...)
			}
			assert.Equal(t, []string{"a:5,6"}, got, "on from the trim horizon")
			assert.Equal(t, []streampoll.LostRange{{ShardID: "a", From: "2", Before: "5"}}, r.Lost())
			assert.Contains(t, logs.String(), `"msg":"LOST FROM THE STREAM: shard a, sequence numbers after 2 to before 5: `)
			assert.Contains(t, logs.String(), `"level":"ERROR"`)

			// The shard ends with every record after the position aged out.
			f.records["a"] = append(f.records["a"], "7", "8")
			f.horizon["a"], f.closed["a"] = 8, true
			for range 4 {
				assert.Equal(t, []string{}, round(t, r))
			}
			assert.Equal(t, []streampoll.LostRange{{ShardID: "a", From: "2", Before: "5"}, {ShardID: "a", From: "6"}}, r.Lost())
			assert.Contains(t, logs.String(), "LOST FROM THE STREAM: shard a, sequence numbers after 6 to the shard's end")
		})
	}
}

// A record Poll keeps retrying (Rewind) that ages out of the stream
// meanwhile is reported lost from it, with OnLost, instead of vanishing;
// an error of OnLost stops Poll.
func TestPollReportsARetriedRecordLost(t *testing.T) {
	for _, trimIterators := range []bool{false, true} {
		t.Run(fmt.Sprintf("trimIterators=%v", trimIterators), func(t *testing.T) {
			f := &fakeStreams{
				pages:   [][]streamtypes.Shard{{{ShardId: aws.String("a")}}},
				records: map[string][]string{"a": {"1", "2", "3", "4"}},
				closed:  map[string]bool{}, expire: map[string]bool{}, trimmed: map[string]int{},
				horizon: map[string]int{}, trimIterators: trimIterators,
			}
			var lost []streampoll.LostRange
			gaveUp, seen := pollUntil(t, f, streampoll.PollOptions{MaxRetries: -1, OnLost: func(_ context.Context, l streampoll.LostRange) error {
				lost = append(lost, l)
				return nil
			}}, func(seq string, n int) bool {
				if seq == "2" && n == 3 {
					f.horizon["a"] = 2 // records 1 and 2 age out while 2 is retried
				}
				return seq == "2"
			})
			assert.Empty(t, gaveUp)
			assert.Equal(t, []streampoll.LostRange{{ShardID: "a", From: "2", FromInclusive: true, Before: "3"}}, lost)
			assert.Equal(t, 3, seen["2"])
			assert.Equal(t, 1, seen["1"], "not handed again")

			f.horizon["a"] = 0
			f.records["a"] = []string{"1", "2", "3", "4"}
			r := streampoll.NewStreamReader(f, "arn:stream", streampoll.StreamReaderOptions{Limit: 2})
			stop := errors.New("stop")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := r.Poll(ctx, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				f.horizon["a"] = 3
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "2"}}}, nil
			}, streampoll.PollOptions{MaxRetries: -1, Interval: time.Millisecond, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
				OnLost: func(context.Context, streampoll.LostRange) error { return stop }})
			require.ErrorIs(t, err, stop)
		})
	}
}

// pollUntil runs Poll over f's shard "a" (records 1-4) with o until h has
// seen record "4" succeed, and returns the failure records handed to
// OnFailure and how often each record was handled.
func pollUntil(t *testing.T, f *fakeStreams, o streampoll.PollOptions, fails func(seq string, n int) bool) ([]streampoll.FailureRecord, map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := map[string]int{}
	var gaveUp []streampoll.FailureRecord
	o.Interval = time.Millisecond
	o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	o.OnFailure = func(_ context.Context, rec streampoll.FailureRecord) error {
		gaveUp = append(gaveUp, rec)
		return nil
	}
	r := streampoll.NewStreamReader(f, "arn:stream", streampoll.StreamReaderOptions{Limit: 2})
	err := r.Poll(ctx, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp := events.DynamoDBEventResponse{}
		for _, rec := range ev.Records {
			seq := rec.Change.SequenceNumber
			seen[seq]++
			if fails(seq, seen[seq]) {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
			} else if seq == "4" {
				cancel()
			}
		}
		return resp, nil
	}, o)
	require.ErrorIs(t, err, context.Canceled)
	return gaveUp, seen
}

// The event source mapping's settings in the poller: MaximumRetryAttempts
// -1 retries a failing record however often until it succeeds; a bounded
// count gives it up after that many retries, and a record older than
// MaxRecordAge is given up at once. Each give-up hands OnFailure the
// on-failure record Lambda would send (DDBStreamBatchInfo of the record).
func TestPollGivesUpLikeTheMapping(t *testing.T) {
	newFake := func() *fakeStreams {
		return &fakeStreams{pages: [][]streamtypes.Shard{{{ShardId: aws.String("a")}}}, records: map[string][]string{"a": {"1", "2", "3", "4"}},
			closed: map[string]bool{}, expire: map[string]bool{}, trimmed: map[string]int{}}
	}
	gaveUp, seen := pollUntil(t, newFake(), streampoll.PollOptions{MaxRetries: -1},
		func(seq string, n int) bool { return seq == "2" && n <= 50 })
	assert.Empty(t, gaveUp, "unlimited retries")
	assert.Equal(t, 51, seen["2"], "50 failures, then success")

	gaveUp, seen = pollUntil(t, newFake(), streampoll.PollOptions{MaxRetries: 2},
		func(seq string, _ int) bool { return seq == "2" })
	require.Len(t, gaveUp, 1)
	assert.Equal(t, 3, seen["2"], "first try and two retries")
	assert.Equal(t, streampoll.ConditionRetriesExhausted, gaveUp[0].RequestContext.Condition)

	created := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	f := newFake()
	f.created = created
	gaveUp, seen = pollUntil(t, f, streampoll.PollOptions{MaxRetries: -1, MaxRecordAge: 20 * time.Hour, Now: func() time.Time { return created.Add(21 * time.Hour) }},
		func(seq string, _ int) bool { return seq == "2" })
	require.Len(t, gaveUp, 1)
	assert.Equal(t, 1, seen["2"], "older than the maximum age at its first failure")
	got, err := json.Marshal(gaveUp[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"requestContext":{"condition":"RecordAgeExceeded","approximateInvokeCount":1},"version":"1.0","timestamp":"2026-11-27T05:00:00.000Z",
		"DDBStreamBatchInfo":{"shardId":"a","startSequenceNumber":"2","endSequenceNumber":"2","approximateArrivalOfFirstRecord":"2026-11-26T08:00:00Z",
		"approximateArrivalOfLastRecord":"2026-11-26T08:00:00Z","batchSize":1,"streamArn":"arn:stream"}}`, string(got))
}

// A failure whose identifier is no sequence number of the batch (a
// handler's bug: garbage, or a record of an earlier batch) fails the whole
// batch, as Lambda treats it: the batch is retried from its first record.
// Poll used to take the lowest identifier as it was: a record of an
// earlier batch was handed out again, garbage that sorts lowest made the
// Streams API refuse the position (and Poll stop), and garbage that sorts
// highest was ignored.
func TestPollUnknownIdentifierFailsTheWholeBatch(t *testing.T) {
	for _, bad := range []string{"not-a-sequence-number", "2"} {
		t.Run(bad, func(t *testing.T) {
			f := &fakeStreams{pages: [][]streamtypes.Shard{{{ShardId: aws.String("a")}}}, records: map[string][]string{"a": {"1", "2", "3", "4"}},
				closed: map[string]bool{}, expire: map[string]bool{}, trimmed: map[string]int{}}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			seen := map[string]int{}
			r := streampoll.NewStreamReader(f, "arn:stream", streampoll.StreamReaderOptions{Limit: 2})
			err := r.Poll(ctx, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				resp := events.DynamoDBEventResponse{}
				for _, rec := range ev.Records {
					seen[rec.Change.SequenceNumber]++
				}
				switch {
				case seen["3"] == 1 && ev.Records[0].Change.SequenceNumber == "3":
					resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: "4"}, {ItemIdentifier: bad}}
				case seen["4"] == 2:
					cancel()
				}
				return resp, nil
			}, streampoll.PollOptions{MaxRetries: -1, Interval: time.Millisecond, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
			require.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, map[string]int{"1": 1, "2": 1, "3": 2, "4": 2}, seen, "the batch of 3 and 4 retried whole")
		})
	}
}
