package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/archive"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/schema"
)

// streamsLayer stands in front of DynamoDB Local's Streams API. With ttl,
// its REMOVE records carry the user identity of DynamoDB's TTL (DynamoDB
// Local's TTL deletion is unreliable, so the tests delete the items
// themselves). The first empty GetRecords calls answer no records and the
// same iterator, as DynamoDB Streams may before later records.
type streamsLayer struct {
	streampoll.StreamsAPI
	ttl bool
	// delay is added to every GetRecords (a slow stream).
	delay time.Duration

	mu    sync.Mutex
	empty int
	calls int
}

func (l *streamsLayer) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	l.mu.Lock()
	l.calls++
	empty := l.empty > 0
	if empty {
		l.empty--
	}
	l.mu.Unlock()
	time.Sleep(l.delay)
	if empty {
		return &dynamodbstreams.GetRecordsOutput{NextShardIterator: in.ShardIterator}, nil
	}
	out, err := l.StreamsAPI.GetRecords(ctx, in, optFns...)
	if err != nil || !l.ttl {
		return out, err
	}
	for i := range out.Records {
		r := &out.Records[i]
		if r.EventName == "UNKNOWN_TO_SDK_VERSION" && r.Dynamodb != nil && len(r.Dynamodb.NewImage) == 0 && len(r.Dynamodb.OldImage) > 0 {
			r.EventName = streamtypes.OperationTypeRemove // a DynamoDB Local quirk
		}
		if r.EventName == streamtypes.OperationTypeRemove {
			r.UserIdentity = &streamtypes.Identity{Type: aws.String(archive.TTLIdentityType), PrincipalId: aws.String(archive.TTLIdentityPrincipal)}
		}
	}
	return out, nil
}

// expired is a table whose events were all deleted (as TTL would), with
// its stream's records in order.
type expired struct {
	table   string
	arn     string
	shard   string
	events  []event.Event
	records []streamtypes.Record // INSERTs, then REMOVEs
}

func newExpired(t *testing.T, n int) expired {
	t.Helper()
	ctx := context.Background()
	x := expired{table: db.CreateTable(t, schema.Events())}
	st := store.New(db.Client, x.table)
	base := time.Now().UTC().Truncate(time.Millisecond)
	for i := range n {
		tenant := []string{"tenant-a", "tenant-b"}[i%2]
		x.events = append(x.events, put(t, st, tenant, base.Add(time.Duration(i)*time.Millisecond)))
	}
	for i, e := range x.events {
		tenant := []string{"tenant-a", "tenant-b"}[i%2]
		_, err := db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(x.table), Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: tenant},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: e.Timestamp + "#" + e.ID},
		}})
		require.NoError(t, err)
	}
	var err error
	x.arn, err = streampoll.LatestStreamARN(ctx, db.Client, x.table)
	require.NoError(t, err)
	streams := ddblocal.NewStreamsClient(db.Endpoint)
	desc, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(x.arn)})
	require.NoError(t, err)
	x.shard = aws.ToString(desc.StreamDescription.Shards[0].ShardId)
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(x.arn), ShardId: aws.String(x.shard), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
	require.NoError(t, err)
	iter := it.ShardIterator
	for len(x.records) < 2*n {
		out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		require.NoError(t, err)
		x.records = append(x.records, out.Records...)
		iter = out.NextShardIterator
	}
	require.Len(t, x.records, 2*n)
	return x
}

func (x expired) seq(i int) string { return aws.ToString(x.records[i].Dynamodb.SequenceNumber) }

// failure is Lambda's on-failure record for records i..j of the stream.
func (x expired) failure(t *testing.T, i, j int) string {
	t.Helper()
	b, err := json.Marshal(streampoll.FailureRecord{
		RequestContext: streampoll.FailureContext{Condition: streampoll.ConditionRecordAgeExceeded, ApproximateInvokeCount: 40},
		Version:        "1.0", Timestamp: "2026-11-26T10:00:00.000Z",
		BatchInfo: &streampoll.BatchInfo{ShardID: x.shard, StartSequenceNumber: x.seq(i), EndSequenceNumber: x.seq(j), BatchSize: j - i + 1, StreamArn: x.arn},
	})
	require.NoError(t, err)
	return string(b)
}

// objects returns every object of bucket: key -> body.
func objects(t require.TestingT, c *s3.Client, bucket string) map[string][]byte {
	ctx := context.Background()
	out := map[string][]byte{}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	for _, o := range list.Contents {
		obj, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		require.NoError(t, err)
		b, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		require.NoError(t, err)
		out[aws.ToString(o.Key)] = b
	}
	return out
}

// archivedIDs decodes every object's lines and returns the event ids.
func archivedIDs(t require.TestingT, objs map[string][]byte) []string {
	var ids []string
	for _, body := range objs {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(t, err)
		raw, err := io.ReadAll(zr)
		require.NoError(t, err)
		for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
			var e struct {
				ID string `json:"event_id"`
			}
			require.NoError(t, json.Unmarshal([]byte(l), &e), l)
			ids = append(ids, e.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

func replayArchive(t *testing.T, stdin string, d *deps, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"-endpoint-url", db.Endpoint}, args...), strings.NewReader(stdin), &out, &errOut, d)
	return code, out.String(), errOut.String()
}

func sortedIDs(evs []event.Event) []string {
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	sort.Strings(ids)
	return ids
}

// A failure record names a range of the stream (here from the last
// INSERT through the fourth REMOVE): the replay re-reads exactly that
// range from DynamoDB Local's stream and writes its TTL deletions to the
// archive (moto S3) through the archiver's code. Replaying it again
// writes the same objects, byte for byte. -dry-run prints and writes
// nothing.
func TestReplayArchiveRange(t *testing.T) {
	x := newExpired(t, 6)
	bucket := moto.CreateBucket(t)
	d := &deps{streams: &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}}
	msg := x.failure(t, 5, 9) // INSERT of event 5, REMOVEs of events 0-3

	code, _, stderr := replayArchive(t, msg, d, "archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "4 events archived from 1 ranges")
	first := objects(t, moto.S3, bucket)
	require.NotEmpty(t, first)
	for k := range first {
		assert.Regexp(t, `^expired/tenant=tenant-[ab]/date=\d{4}-\d\d-\d\d/\d+-[0-9a-f]{16}\.jsonl\.gz$`, k)
	}
	assert.Equal(t, sortedIDs(x.events[:4]), archivedIDs(t, first), "the range's TTL deletions, once each")

	code, _, stderr = replayArchive(t, msg, d, "archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, first, objects(t, moto.S3, bucket), "the same objects again")

	other := moto.CreateBucket(t)
	code, out, stderr := replayArchive(t, msg, d, "-dry-run", "archive", "-bucket", other)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, objects(t, moto.S3, other), "a dry run writes nothing")
	assert.Equal(t, 4, strings.Count(out, `"key":"expired/tenant=`), out)
	assert.Contains(t, out, `"event_id":"`+x.events[0].ID+`"`)
	assert.NotContains(t, out, x.events[4].ID, "outside the range")
}

// The story end to end: S3 is down past the mapping's maximum record age,
// so the poller (the mapping's semantics) gives every TTL deletion up and
// sends Lambda's on-failure records to the failure queue (moto SQS).
// Once S3 is back, draining that queue re-archives every one of them
// from the stream and empties the queue; a parked record stays there.
func TestReplayArchiveFromFailureQueue(t *testing.T) {
	ctx := context.Background()
	const n = 8
	x := newExpired(t, n)
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	q := moto.SQS

	s3Faults := &mototest.FaultClient{}
	s3Faults.Fail("PutObject", -1) // S3 is down
	a, err := archive.New(archive.Config{
		Putter: moto.S3Client(func(o *s3.Options) { o.HTTPClient = s3Faults; o.Retryer = mototest.FastRetryer(2)() }),
		Bucket: bucket, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	layer := &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}
	reader := streampoll.NewStreamReader(layer, x.arn, streampoll.StreamReaderOptions{Limit: 3, Region: ddb.LocalRegion})
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var mu sync.Mutex
	given := 0
	done := make(chan error, 1)
	go func() {
		done <- reader.Poll(pctx, a.Handle, streampoll.PollOptions{
			Interval: 5 * time.Millisecond, MaxRetries: -1, MaxRecordAge: 20 * time.Hour,
			// The records are 21 hours old by this clock: past the age.
			Now: func() time.Time { return time.Now().Add(21 * time.Hour) },
			OnFailure: func(ctx context.Context, rec streampoll.FailureRecord) error {
				body, err := json.Marshal(rec)
				if err != nil {
					return err
				}
				_, err = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(string(body))})
				mu.Lock()
				given++
				mu.Unlock()
				return err
			},
			Logger: slog.New(slog.NewJSONHandler(&syncio.Buffer{}, nil)),
		})
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return given == n }, 50*time.Second, 10*time.Millisecond, "every TTL deletion given up on")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Empty(t, objects(t, moto.S3, bucket), "nothing archived while S3 was down")
	_, err = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(`{"reason":"archive: malformed TTL record: attribute \"payload\" is missing or not a map","record":{"eventID":"x"}}`)})
	require.NoError(t, err)

	// S3 is back: drain the failure queue.
	code, _, stderr := replayArchive(t, "", &deps{streams: layer, queue: q}, "-sqs-endpoint-url", moto.Endpoint,
		"archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint, "-from-queue", queue, "-function", "archiver")
	assert.Equal(t, 1, code, "the parked record needs a person: %s", stderr)
	assert.Contains(t, stderr, "8 events archived from 8 ranges")
	assert.Contains(t, stderr, "1 messages are records the archiver parked")
	assert.Equal(t, sortedIDs(x.events), archivedIDs(t, objects(t, moto.S3, bucket)), "every expired event archived")

	// Only the parked record is left, visible for whoever deals with it.
	msgs, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 1)
	assert.Contains(t, aws.ToString(msgs.Messages[0].Body), `"reason":`)
}

// A dry run of the queue deletes nothing and leaves every message visible.
func TestReplayArchiveDryRunKeepsTheQueue(t *testing.T) {
	ctx := context.Background()
	x := newExpired(t, 2)
	queue := moto.CreateQueue(t, nil)
	q := moto.SQS
	for _, m := range []string{x.failure(t, 2, 2), x.failure(t, 3, 3)} {
		_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(m)})
		require.NoError(t, err)
	}
	d := &deps{streams: &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}, queue: q}
	code, out, stderr := replayArchive(t, "", d, "-dry-run", "archive", "-from-queue", queue)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 2, strings.Count(out, `"key":"expired/`), out)
	visible, _ := queueCounts(t, queue)
	assert.Equal(t, 2, visible, "both still there and visible")
}

func TestReplayArchiveUsage(t *testing.T) {
	x := newExpired(t, 1)
	d := &deps{streams: &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}}
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"archive"}, x.failure(t, 1, 1), "archive needs -bucket"},
		{[]string{"archive", "-bucket", "b", "extra"}, "", "archive takes flags only"},
		{[]string{"archive", "-bucket", "b"}, "", "no failure record on standard input"},
		{[]string{"archive", "-bucket", "b"}, "not json", "standard input is not failure records"},
		{[]string{"archive", "-bucket", "b"}, `{"requestContext":{}}`, "no DDBStreamBatchInfo"},
		{[]string{"archive", "-bucket", "b"}, `{"DDBStreamBatchInfo":{"shardId":"s"}}`, "lacks streamArn"},
		{[]string{"archive", "-bucket", "b", "-prefix", "/x"}, x.failure(t, 1, 1), `Prefix "/x"`},
		{[]string{"-max-empty-reads", "0", "archive", "-bucket", "b"}, x.failure(t, 1, 1), "-max-empty-reads 0"},
		// A queue shared with another consumer would lose that
		// consumer's ranges to a run that takes the first record's
		// function for the archiver's (found by review).
		{[]string{"archive", "-bucket", "b", "-from-queue", "https://sqs.example/q"}, "", "it needs -function, the archiver's name"},
		{[]string{"archive", "-bucket", "b", "-from-queue", "https://sqs.example/q", "-function", "f", "-hold", "0"}, "", "-hold 0 must be 10 to 32400"},
	} {
		code, _, stderr := replayArchive(t, tc.stdin, d, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

// Several failure records at once, as `aws sqs receive-message --query
// 'Messages[].Body'` prints them (an array of JSON strings), and a parked
// record among them: the ranges are archived, the parked one reported.
func TestReplayArchiveManyOnInput(t *testing.T) {
	x := newExpired(t, 3)
	bucket := moto.CreateBucket(t)
	bodies, err := json.Marshal([]string{x.failure(t, 3, 3), `{"reason":"no payload","record":{}}`, x.failure(t, 4, 5)})
	require.NoError(t, err)
	d := &deps{streams: &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}}
	code, _, stderr := replayArchive(t, string(bodies), d, "archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "3 events archived from 2 ranges")
	assert.Contains(t, stderr, "1 messages are records the archiver parked")
	assert.Equal(t, sortedIDs(x.events), archivedIDs(t, objects(t, moto.S3, bucket)))
}

// One message the replay cannot use (here first on the queue: a body
// that is no failure record, and a range on a shard the stream does not
// have, as a range past the stream's 24 h fails) does not stop the
// drain: every other range on the queue is archived, the two are left
// there, visible again at the end, and the run exits 1 naming them.
func TestReplayArchiveDrainGoesPastABadMessage(t *testing.T) {
	ctx := context.Background()
	x := newExpired(t, 4)
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	q := moto.SQS
	var lost streampoll.FailureRecord
	require.NoError(t, json.Unmarshal([]byte(x.failure(t, 4, 4)), &lost))
	lost.BatchInfo.ShardID = "shardId-00000000000000000000-gone"
	lostBody, err := json.Marshal(lost)
	require.NoError(t, err)
	bodies := []string{`{"hello":"an operator's test message"}`, string(lostBody)}
	for i := 4; i < 8; i++ {
		bodies = append(bodies, x.failure(t, i, i))
	}
	for _, b := range bodies {
		_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(b)})
		require.NoError(t, err)
	}

	d := &deps{streams: &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}, queue: q}
	code, _, stderr := replayArchive(t, "", d, "archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint, "-from-queue", queue, "-function", "archiver")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "4 events archived from 4 ranges")
	assert.Contains(t, stderr, "2 messages were not replayed")
	assert.Contains(t, stderr, "no DDBStreamBatchInfo")
	assert.Contains(t, stderr, "gone")
	assert.Equal(t, sortedIDs(x.events), archivedIDs(t, objects(t, moto.S3, bucket)), "every range the queue could give")

	// The two are left, visible for the next run or a person.
	msgs, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	var left []string
	for _, m := range msgs.Messages {
		left = append(left, aws.ToString(m.Body))
	}
	assert.ElementsMatch(t, bodies[:2], left)
}

// Messages the drain leaves on the queue (parked records) do not end the
// drain early on a real SQS engine (moto): here ten parked records, then
// eleven ranges that take longer to replay than the hold (2 s). Whether
// the renewals keep the parked records hidden (TestReplayArchiveRenewsItsHold
// shows that they do) or they come back, are held again and not counted
// twice, a full receive of them is not the end of the queue. Every range
// is archived. (Found by review, when the drain hid a kept message for 12
// hours: the
// drain asked for 12 hours from the moment it kept a message, SQS refused
// it, the error was dropped, the parked records came back after the
// receive's visibility, filled a receive of ten, which the drain took for
// the end of the queue: the eleventh range was left unarchived.)
func TestReplayArchiveDrainKeepsParkedRecordsHidden(t *testing.T) {
	ctx := context.Background()
	const n = 11
	x := newExpired(t, n)
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	q := moto.SQS
	var bodies []string
	for range 10 {
		bodies = append(bodies, `{"reason":"archive: malformed TTL record: no old image","record":{}}`)
	}
	for i := n; i < 2*n; i++ {
		bodies = append(bodies, x.failure(t, i, i))
	}
	for _, b := range bodies {
		_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(b)})
		require.NoError(t, err)
	}
	layer := &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true, delay: 200 * time.Millisecond}
	a, err := archive.New(archive.Config{Putter: moto.S3, Bucket: bucket, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)
	r := &archiveReplayer{c: clients{streams: layer, maxEmpty: 10}, a: a, log: slog.New(slog.NewJSONHandler(io.Discard, nil)), hold: 2}
	require.NoError(t, r.drain(ctx, q, queue, false))
	assert.Equal(t, n, r.ranges, "every range replayed")
	assert.Equal(t, 10, r.parked, "each parked record counted once")
	assert.Equal(t, sortedIDs(x.events), archivedIDs(t, objects(t, moto.S3, bucket)))
	visible, _ := queueCounts(t, queue)
	assert.Equal(t, 10, visible, "the parked records left, visible again")
}
