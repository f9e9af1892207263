package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// trimmingStreams is DynamoDB Local's Streams API with a trim horizon:
// the records before sequence number horizon have aged out. DynamoDB
// Local keeps every record (it never trims a stream), so this thin
// wrapper is the fault injection, and only that: it answers
// TrimmedDataAccessException where DynamoDB Streams does (GetShardIterator
// at or after a trimmed sequence number; GetRecords on an iterator whose
// record was trimmed since) and serves TRIM_HORIZON from the horizon;
// every record still comes from DynamoDB Local.
type trimmingStreams struct {
	streampoll.StreamsAPI
	mu      sync.Mutex
	horizon string
	// trimAtRead, when set, trims the stream up to it at GetRecords call
	// number trimAtCall (from 0), which fails: the iterator was valid
	// when obtained, its record aged out before it was used.
	trimAtRead string
	trimAtCall int
	// onePerPage answers GetRecords with one record a page, the next
	// iterator after it (on shard of stream arn).
	onePerPage bool
	// alwaysTrim fails every GetRecords as trimmed (a trim horizon that
	// keeps moving past the reader).
	alwaysTrim bool
	arn, shard string
	calls      int
	iters      []streamtypes.ShardIteratorType
}

func trimmedErr() error {
	return &streamtypes.TrimmedDataAccessException{Message: aws.String("the operation attempted to read past the oldest stream record in a shard")}
}

func (s *trimmingStreams) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	s.mu.Lock()
	horizon := s.horizon
	s.iters = append(s.iters, in.ShardIteratorType)
	s.mu.Unlock()
	cp := *in
	switch in.ShardIteratorType {
	case streamtypes.ShardIteratorTypeAtSequenceNumber, streamtypes.ShardIteratorTypeAfterSequenceNumber:
		if horizon != "" && seqAfter(horizon, aws.ToString(in.SequenceNumber)) {
			return nil, trimmedErr()
		}
	case streamtypes.ShardIteratorTypeTrimHorizon:
		if horizon != "" {
			cp.ShardIteratorType, cp.SequenceNumber = streamtypes.ShardIteratorTypeAtSequenceNumber, aws.String(horizon)
		}
	}
	return s.StreamsAPI.GetShardIterator(ctx, &cp, optFns...)
}

func (s *trimmingStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	s.mu.Lock()
	call := s.calls
	s.calls++
	if s.alwaysTrim {
		s.mu.Unlock()
		return nil, trimmedErr()
	}
	if s.trimAtRead != "" && call == s.trimAtCall {
		s.horizon, s.trimAtRead = s.trimAtRead, ""
		s.mu.Unlock()
		return nil, trimmedErr()
	}
	s.mu.Unlock()
	out, err := s.StreamsAPI.GetRecords(ctx, in, optFns...)
	if err != nil || !s.onePerPage || len(out.Records) < 2 {
		return out, err
	}
	out.Records = out.Records[:1]
	next, err := s.StreamsAPI.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(s.arn), ShardId: aws.String(s.shard),
		ShardIteratorType: streamtypes.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: out.Records[0].Dynamodb.SequenceNumber})
	if err != nil {
		return nil, err
	}
	out.NextShardIterator = next.ShardIterator
	return out, nil
}

// trimmedRange is a table with n events on its stream and the failure
// message of a range of them.
type trimmedRange struct {
	table, arn, shard string
	events            []event.Event
	seqs              []string
	created           []time.Time
}

func newTrimmedRange(t *testing.T, n int) trimmedRange {
	t.Helper()
	x := trimmedRange{table: db.CreateTable(t, schema.Events())}
	st := store.New(db.Client, x.table)
	for i := range n {
		x.events = append(x.events, put(t, st, "tenant-a", time.Now().UTC().Add(time.Duration(i)*time.Millisecond)))
	}
	var recs *dynamodbstreams.GetRecordsOutput
	_, x.arn, x.shard, recs = streamRecords(t, x.table, n)
	for _, r := range recs.Records {
		x.seqs = append(x.seqs, aws.ToString(r.Dynamodb.SequenceNumber))
		x.created = append(x.created, aws.ToTime(r.Dynamodb.ApproximateCreationDateTime))
	}
	return x
}

// message is the stream failure queue's message for records i..j.
func (x trimmedRange) message(t *testing.T, i, j int) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"requestContext": map[string]any{"condition": "RecordAgeExceeded"},
		"DDBStreamBatchInfo": map[string]any{"shardId": x.shard, "streamArn": x.arn, "batchSize": j - i + 1,
			"startSequenceNumber": x.seqs[i], "endSequenceNumber": x.seqs[j],
			"approximateArrivalOfFirstRecord": x.created[i].UTC().Format(time.RFC3339Nano),
			"approximateArrivalOfLastRecord":  x.created[j].UTC().Format(time.RFC3339Nano)},
	})
	require.NoError(t, err)
	return string(b)
}

func (x trimmedRange) replay(t *testing.T, streams *trimmingStreams, msg string) (int, []string, string) {
	t.Helper()
	sk := &sink{}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-endpoint-url", db.Endpoint, "-table", x.table, "-queue-url", "q", "stream"},
		strings.NewReader(msg), &out, &errOut, &deps{pub: sk.sender(), streams: streams})
	return code, sk.ids, errOut.String()
}

func ids(evs []event.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

// A range whose first records aged out of the stream (24 h) before the
// replay: GetShardIterator at its start answers
// TrimmedDataAccessException. The replay publishes what the stream still
// has of the range, from its trim horizon, and reports the lost start on
// standard error and in the summary, with the table replay of its time
// window, and exits 3. (Found by review: the whole range failed, exit 1,
// nothing published, while the rest of it was aging out too.)
func TestReplayStreamStartTrimmed(t *testing.T) {
	x := newTrimmedRange(t, 5)
	streams := &trimmingStreams{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), horizon: x.seqs[2]}

	code, got, stderr := x.replay(t, streams, x.message(t, 0, 4))
	assert.Equal(t, exitLost, code, stderr)
	assert.Equal(t, ids(x.events[2:]), got, "what the stream still has of the range, in order")
	assert.Contains(t, stderr, "3 events published")
	assert.Contains(t, stderr, "had aged out of the stream")
	assert.Contains(t, stderr, "from "+x.seqs[0]+" (the range's start) to before "+x.seqs[2])
	assert.Contains(t, stderr, "table -all-tenants -from ", "the table replay of the lost window")
	assert.Contains(t, stderr, "1 part of the range was lost", "the summary")
	assert.Equal(t, []streamtypes.ShardIteratorType{streamtypes.ShardIteratorTypeAtSequenceNumber, streamtypes.ShardIteratorTypeTrimHorizon}, streams.iters)

	// The table replay the summary prints publishes the lost events.
	require.Contains(t, stderr, "table -all-tenants -from ")
	cmd := stderr[strings.Index(stderr, "table -all-tenants -from "):]
	cmd = cmd[:strings.IndexAny(cmd, "\n)")]
	args := strings.Fields(cmd)
	sk := &sink{}
	c, _, tableErr := replay(t, "", sk, append([]string{"-table", x.table, "-queue-url", "q"}, args...)...)
	require.Equal(t, 0, c, tableErr)
	assert.Subset(t, sk.ids, ids(x.events[:2]), "%v", args)
}

// The range's first record aged out between GetShardIterator and the first
// GetRecords (DynamoDB Streams then fails GetRecords with
// TrimmedDataAccessException): same outcome.
func TestReplayStreamTrimmedWhileReading(t *testing.T) {
	x := newTrimmedRange(t, 5)
	streams := &trimmingStreams{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), trimAtRead: x.seqs[3]}

	code, got, stderr := x.replay(t, streams, x.message(t, 0, 4))
	assert.Equal(t, exitLost, code, stderr)
	assert.Equal(t, ids(x.events[3:]), got)
	assert.Contains(t, stderr, "from "+x.seqs[0]+" (the range's start) to before "+x.seqs[3])
}

// Records in the middle of the range aged out while the replay read it
// (a page at a time): the records before and after the gap are published,
// and the gap is reported after the last record read.
func TestReplayStreamTrimmedMidRange(t *testing.T) {
	x := newTrimmedRange(t, 5)
	streams := &trimmingStreams{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), onePerPage: true, arn: x.arn, shard: x.shard,
		trimAtCall: 2, trimAtRead: x.seqs[3]}

	code, got, stderr := x.replay(t, streams, x.message(t, 0, 4))
	assert.Equal(t, exitLost, code, stderr)
	assert.Equal(t, ids([]event.Event{x.events[0], x.events[1], x.events[3], x.events[4]}), got, "once each, in order")
	assert.Contains(t, stderr, "sequence numbers after "+x.seqs[1]+" to before "+x.seqs[3])
	assert.Contains(t, stderr, "table -all-tenants -from ")
}

// A range wholly aged out publishes nothing and says the whole range is
// lost (exit 3); a range that is still all there is untouched (exit 0).
func TestReplayStreamWhollyTrimmed(t *testing.T) {
	x := newTrimmedRange(t, 4)
	streams := &trimmingStreams{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), horizon: x.seqs[2]}

	code, got, stderr := x.replay(t, streams, x.message(t, 0, 1))
	assert.Equal(t, exitLost, code, stderr)
	assert.Empty(t, got)
	assert.Contains(t, stderr, "from "+x.seqs[0]+" (the range's start) through the range's end "+x.seqs[1])
	assert.Contains(t, stderr, "0 events published")

	code, got, stderr = x.replay(t, streams, x.message(t, 2, 3))
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, ids(x.events[2:]), got)
	assert.NotContains(t, stderr, "aged out")
}

// The archive's replay of a range whose first TTL deletions aged out of
// the stream archives the deletions the stream still has, logs the lost
// part (LOST FROM THE STREAM, with its sequence numbers and times), deletes
// the message like the others (nothing more can be read for it) and
// exits 3; the other range on the queue is archived as usual.
func TestReplayArchiveStartTrimmed(t *testing.T) {
	ctx := context.Background()
	x := newExpired(t, 4) // records 0-3 INSERTs, 4-7 the REMOVEs of events 0-3
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	for _, m := range []string{x.failure(t, 4, 6), x.failure(t, 7, 7)} {
		_, err := moto.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(m)})
		require.NoError(t, err)
	}
	trim := &trimmingStreams{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), horizon: x.seq(5)}
	d := &deps{streams: &streamsLayer{StreamsAPI: trim, ttl: true}, queue: moto.SQS}

	code, _, stderr := replayArchive(t, "", d, "archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint, "-from-queue", queue, "-function", "archiver")
	assert.Equal(t, exitLost, code, stderr)
	assert.Contains(t, stderr, "3 events archived from 2 ranges")
	assert.Contains(t, stderr, "LOST FROM THE STREAM")
	assert.Contains(t, stderr, "from "+x.seq(4)+" (the range's start) to before "+x.seq(5))
	assert.Contains(t, stderr, "1 ranges had aged out of the stream")
	assert.Equal(t, sortedIDs(x.events[1:]), archivedIDs(t, objects(t, moto.S3, bucket)), "what the stream still had")
	attrs, err := moto.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queue), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	require.NoError(t, err)
	assert.Equal(t, "0", attrs.Attributes["ApproximateNumberOfMessages"], "both messages deleted")
	assert.Equal(t, "0", attrs.Attributes["ApproximateNumberOfMessagesNotVisible"])
}

// A shard whose GetRecords keeps answering TrimmedDataAccessException,
// from its trim horizon too, fails the replay (exit 1) after a few
// repositionings instead of looping, and the lost start is still reported.
func TestReplayStreamKeepsBeingTrimmed(t *testing.T) {
	x := newTrimmedRange(t, 2)
	streams := &trimmingStreams{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), alwaysTrim: true}

	code, got, stderr := x.replay(t, streams, x.message(t, 0, 1))
	assert.Equal(t, 1, code, stderr)
	assert.Empty(t, got)
	assert.Contains(t, stderr, "4 TrimmedDataAccessExceptions in a row")
	assert.Contains(t, stderr, "LOST FROM THE STREAM: shard "+x.shard+", sequence numbers from "+x.seqs[0]+" (the range's start) through the range's end "+x.seqs[1])
	assert.Len(t, streams.iters, 1+maxTrims, "AT_SEQUENCE_NUMBER, then TRIM_HORIZON after each trim but the last")
}
