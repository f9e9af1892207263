package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/archive"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbconfig"
)

// The drain on a run longer than the receive's visibility: moto cannot
// make a replay last minutes, so these use a test double of SQS's
// visibility semantics and of a slow stream on a virtual clock (the
// drain's behaviour on real SQS, moto, is in archive_test.go).

// slowClock is the virtual time the double queue and stream share.
type slowClock struct{ now time.Time }

// slowStreams serves each range as one TTL deletion whose sequence number
// is the range's start; every GetRecords takes 120 s of the clock.
type slowStreams struct{ c *slowClock }

func (f *slowStreams) DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	return nil, fmt.Errorf("not used")
}

func (f *slowStreams) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: in.SequenceNumber}, nil
}

func (f *slowStreams) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.c.now = f.c.now.Add(120 * time.Second)
	seq := aws.ToString(in.ShardIterator)
	s := func(v string) streamtypes.AttributeValue { return &streamtypes.AttributeValueMemberS{Value: v} }
	rec := streamtypes.Record{
		EventName:    streamtypes.OperationTypeRemove,
		UserIdentity: &streamtypes.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")},
		Dynamodb: &streamtypes.StreamRecord{SequenceNumber: aws.String(seq), StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
			Keys: map[string]streamtypes.AttributeValue{"user_id": s("acme")},
			OldImage: map[string]streamtypes.AttributeValue{"user_id": s("acme"), "event_id": s("ev-" + seq), "event_type": s("t"),
				"status": s("delivered"), "timestamp": s("2026-01-01T00:00:00Z"), "payload": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{}}}},
	}
	return &dynamodbstreams.GetRecordsOutput{Records: []streamtypes.Record{rec}, NextShardIterator: aws.String("next")}, nil
}

// visibilityQueue holds messages by index and honours VisibilityTimeout
// on the clock; it fails after 50 receives (a drain that does not end).
type visibilityQueue struct {
	c        *slowClock
	mu       sync.Mutex
	bodies   []string
	visible  []time.Time
	deleted  []bool
	receives int
	got      []int // receives per message
	// tick advances the clock at every receive.
	tick time.Duration
}

func newVisibilityQueue(c *slowClock, ranges, parked int) *visibilityQueue {
	q := &visibilityQueue{c: c}
	for i := range ranges {
		seq := strconv.Itoa(100 + i)
		q.bodies = append(q.bodies, fmt.Sprintf(`{"DDBStreamBatchInfo":{"shardId":"s","startSequenceNumber":%q,"endSequenceNumber":%q,"streamArn":"arn"}}`, seq, seq))
	}
	for range parked {
		q.bodies = append(q.bodies, `{"reason":"malformed","record":{}}`)
	}
	q.visible = make([]time.Time, len(q.bodies))
	q.deleted = make([]bool, len(q.bodies))
	q.got = make([]int, len(q.bodies))
	return q
}

func (q *visibilityQueue) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.receives++
	q.c.now = q.c.now.Add(q.tick)
	if q.receives > 50 {
		return nil, fmt.Errorf("50 receives: the drain does not end")
	}
	out := &sqs.ReceiveMessageOutput{}
	for i := range q.bodies {
		if q.deleted[i] || q.c.now.Before(q.visible[i]) || len(out.Messages) == int(in.MaxNumberOfMessages) {
			continue
		}
		q.visible[i] = q.c.now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
		q.got[i]++
		h := strconv.Itoa(i)
		out.Messages = append(out.Messages, sqstypes.Message{MessageId: aws.String("m" + h), ReceiptHandle: aws.String(h), Body: aws.String(q.bodies[i])})
	}
	return out, nil
}

func (q *visibilityQueue) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"ApproximateNumberOfMessagesNotVisible": "0"}}, nil
}

func (q *visibilityQueue) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, fmt.Errorf("not used")
}

func (q *visibilityQueue) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, _ := strconv.Atoi(aws.ToString(in.ReceiptHandle))
	q.deleted[i] = true
	return &sqs.DeleteMessageOutput{}, nil
}

func (q *visibilityQueue) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range in.Entries {
		i, _ := strconv.Atoi(aws.ToString(e.ReceiptHandle))
		q.visible[i] = q.c.now.Add(time.Duration(e.VisibilityTimeout) * time.Second)
	}
	return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
}

func slowReplayer(t *testing.T, c *slowClock, out io.Writer) *archiveReplayer {
	a, err := archive.New(archive.Config{Putter: &printPutter{w: out}, Bucket: "b", Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)
	return &archiveReplayer{c: clients{streams: &slowStreams{c: c}, maxEmpty: 10}, a: a, log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
}

// A dry run whose pass outlasts the hold (3 ranges of 120 s, a hold of
// 120 s, and no renewal: renewEvery an hour of the real clock, so every
// message comes back) ends, prints each range once
// and makes every message visible again; a real run counts a parked
// record once. (Found by review: the messages came back and the dry run
// never ended; the parked record was counted twice. The renewals
// themselves are tested on moto: TestReplayArchiveRenewsItsHold.)
func TestDrainLongerThanTheVisibility(t *testing.T) {
	c := &slowClock{now: time.Unix(0, 0)}
	q := newVisibilityQueue(c, 3, 1)
	var out bytes.Buffer
	r := slowReplayer(t, c, &out)
	r.renewEvery = time.Hour
	require.NoError(t, r.drain(context.Background(), q, "url", true))
	assert.Equal(t, []int{2, 2, 2, 2}, q.got, "every message came back once (else this test shows nothing), and the run ended")
	assert.Equal(t, 3, strings.Count(out.String(), "\n"), "each range's event printed once:\n%s", out.String())
	assert.Equal(t, 3, r.ranges)
	assert.Equal(t, 1, r.parked)
	for i, v := range q.visible {
		assert.False(t, c.now.Before(v), "message %d visible again after the dry run", i)
		assert.False(t, q.deleted[i], "a dry run deletes nothing")
	}

	c = &slowClock{now: time.Unix(0, 0)}
	q = newVisibilityQueue(c, 3, 1)
	r = slowReplayer(t, c, io.Discard)
	r.renewEvery = time.Hour
	require.NoError(t, r.drain(context.Background(), q, "url", false))
	assert.Equal(t, 1, r.parked, "the parked record counted once")
	assert.Equal(t, 3, r.ranges)
	assert.Equal(t, []bool{true, true, true, false}, q.deleted, "the ranges deleted, the parked record left")
	assert.False(t, c.now.Before(q.visible[3]), "the parked record visible again at the end")
}

// The replay's S3 client gives an upload its own bound, not the
// configuration's 3 s per attempt (meant for DynamoDB): an object that
// takes longer to send is written. (Found by review: every attempt of a
// large object failed at 3 s, and the replay blamed the bucket.)
func TestReplayS3AttemptOutlastsTheDynamoDBBound(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "x")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(ddb.DefaultAttemptTimeout + time.Second) // a slow upload's answer
		w.Header().Set("ETag", `"x"`)
	}))
	defer srv.Close()
	cfg, err := ddbconfig.LoadConfig(context.Background(), ddb.Options{})
	require.NoError(t, err)
	_, err = archiveS3(cfg, srv.URL).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Body: strings.NewReader("x")})
	require.NoError(t, err)
}

// batchAnswers answers every ChangeMessageVisibilityBatch entry with the
// error code of its receipt handle, if any.
type batchAnswers struct {
	failureQueue
	codes map[string]string // receipt handle -> error code
}

func (q batchAnswers) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		if c, ok := q.codes[aws.ToString(e.ReceiptHandle)]; ok {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String(c), Message: aws.String(c)})
		}
	}
	return out, nil
}

// Releasing at the end: a message no longer in flight under its handle
// (back on the queue by itself, or received again) is visible already or
// someone else's, not a failed clean-up; any other refusal is. Renewing:
// every refusal counts. (Found by review: a message back by itself made
// the run exit 1 telling the operator to wait.)
func TestChangeAllCountsWhatSQSRefused(t *testing.T) {
	q := batchAnswers{codes: map[string]string{"h1": "MessageNotInflight", "h2": "ReceiptHandleIsInvalid", "h3": "InternalError", "h4": "InvalidParameterValue"}}
	handles := map[string]string{}
	for i := range 23 { // three batches
		handles[fmt.Sprintf("m%02d", i)] = fmt.Sprintf("h%d", i)
	}
	h := &holder{q: q, url: "u", hold: 5, held: handles}
	n, err := h.release(context.Background())
	assert.Equal(t, 1, n, "only the message SQS refused for another reason")
	assert.ErrorContains(t, err, "InternalError")
	failed, err := h.changeAll(context.Background(), handles, 5)
	assert.ElementsMatch(t, []string{"m01", "m02", "m03", "m04"}, failed)
	assert.Error(t, err)
}

// -function names the archiver as Lambda's failure records do (a full
// ARN, qualified or not) or as an operator would (a name, name:alias, a
// partial ARN): the name is compared, and the account and region where
// both sides give them.
func TestSameFunction(t *testing.T) {
	const arn = "arn:aws:lambda:us-east-1:123456789012:function:archiver"
	for _, given := range []string{"archiver", "archiver:live", arn, arn + ":live", "123456789012:function:archiver", "function:archiver:7"} {
		assert.True(t, sameFunction(given, arn+":live"), given)
		assert.True(t, sameFunction(given, arn), given)
	}
	for _, given := range []string{"other", "arn:aws:lambda:us-east-1:123456789012:function:other", "archiver-2",
		"arn:aws:lambda:eu-west-1:123456789012:function:archiver", "arn:aws:lambda:us-east-1:210987654321:function:archiver:live",
		"210987654321:function:archiver"} {
		assert.False(t, sameFunction(given, arn), "%s: another name, region or account", given)
	}
}

// A drain whose held messages keep coming back (every renewal fails: here
// none is made, and each receive comes after their hold) ends after
// maxBack such receives in a row, saying that it may have left messages,
// instead of receiving them for ever; each range is still printed once.
// (Found by review: the run ended only at an empty receive.)
func TestDrainEndsWhenHeldMessagesKeepComingBack(t *testing.T) {
	c := &slowClock{now: time.Unix(0, 0)}
	q := newVisibilityQueue(c, 2, 1)
	q.tick = 121 * time.Second // each receive a hold later
	var out bytes.Buffer
	r := slowReplayer(t, c, &out)
	r.renewEvery = time.Hour
	require.NoError(t, r.drain(context.Background(), q, "url", true))
	assert.True(t, r.cutShort)
	assert.Equal(t, 1+maxBack, q.receives, "the first receive, then maxBack that brought only messages seen")
	assert.Equal(t, 2, strings.Count(out.String(), "\n"), "each range printed once:\n%s", out.String())
	assert.Equal(t, 1, r.parked)
	var errOut bytes.Buffer
	assert.True(t, r.queueSummary(&errOut))
	assert.Contains(t, errOut.String(), "the run ended early")
}
