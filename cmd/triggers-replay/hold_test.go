package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/archive"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/dev/motolocal"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/schema"
)

// The drain's hold on real engines: the command run as a process and
// killed or hung up on, the renewals on moto's visibility clock, the
// records a replayed range can never archive, and a failure queue shared
// with another consumer.

// childEnv, set to the command's arguments as a JSON array, makes the
// test binary run the command (childMain) instead of the tests; childDDB
// and childMoto give it the engines.
const (
	childEnv  = "TRIGGERS_REPLAY_TEST_CHILD"
	childDDB  = "TRIGGERS_REPLAY_TEST_DDB"
	childMoto = "TRIGGERS_REPLAY_TEST_MOTO"
)

// childMain runs the command as main does (signalContext), with the TTL
// stream layer in front of DynamoDB Local, slowed so that a test can stop
// it between two ranges, and moto's SQS.
func childMain() int {
	ctx, stop := signalContext()
	defer stop()
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &args); err != nil {
		return 2
	}
	layer := &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(os.Getenv(childDDB)), ttl: true, delay: 300 * time.Millisecond}
	return run(ctx, append([]string{"-endpoint-url", os.Getenv(childDDB)}, args...), os.Stdin, os.Stdout, os.Stderr,
		&deps{streams: layer, queue: motolocal.NewSQSClient(os.Getenv(childMoto))})
}

// startChild starts the command with args and returns it once it has
// replayed its first range (its log says so).
func startChild(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return startChildUnder(t, nil, args...)
}

// startChildUnder is startChild with the command run by wrapper (such as
// nohup).
func startChildUnder(t *testing.T, wrapper []string, args ...string) *exec.Cmd {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	argv := append(append([]string{}, wrapper...), os.Args[0], "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw), childDDB+"="+db.Endpoint, childMoto+"="+moto.Endpoint)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	replayed := make(chan bool, 1)
	var lines []string // what it printed before its first range, for a failure
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if once {
				continue
			}
			if strings.Contains(sc.Text(), `"range replayed"`) {
				once = true
				replayed <- true
				continue
			}
			lines = append(lines, sc.Text())
		}
		if !once {
			replayed <- false
		}
	}()
	if !<-replayed {
		t.Fatalf("the command ended before it replayed a range:\n%s", strings.Join(lines, "\n"))
	}
	return cmd
}

// queueCounts returns the queue's visible and in-flight messages.
func queueCounts(t require.TestingT, url string) (visible, inFlight int) {
	out, err := moto.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	require.NoError(t, err)
	visible, err = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	require.NoError(t, err)
	inFlight, err = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	require.NoError(t, err)
	return visible, inFlight
}

// sendRanges sends to the queue url one failure record per TTL deletion
// of x (records n to 2n-1 of its stream), as the archiver's mapping
// gives each up.
func (x expired) sendRanges(t *testing.T, url string) {
	t.Helper()
	for i := len(x.events); i < 2*len(x.events); i++ {
		sendAll(t, url, x.failure(t, i, i))
	}
}

func sendAll(t *testing.T, url string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		_, err := moto.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)})
		require.NoError(t, err)
	}
}

// A dry run killed (SIGKILL: no clean-up) between two ranges, the
// runbook's "look first" interrupted: the next run, at once, says that
// it could not see the messages the killed run held and exits 1 instead
// of "0 events archived" and 0; once the hold (here 20 s) has passed, the
// messages are back and a run archives every range (-hold 20: the test
// needs the killed run's messages still hidden when the next run starts,
// after the child's start, its kill and a queue read, on a busy machine).
// (Found by review:
// the messages were hidden for 12 hours, out of sight of the next run
// and of the alarm, until their ranges had left the stream.)
func TestReplayArchiveKilledRunHidesNothingLong(t *testing.T) {
	const n = 4
	x := newExpired(t, n)
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	x.sendRanges(t, queue)
	child := startChild(t, "-dry-run", "archive", "-from-queue", queue, "-hold", "20")
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	_, inFlight := queueCounts(t, queue)
	require.Positive(t, inFlight, "the killed run held messages")

	d := &deps{streams: &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}, queue: moto.SQS}
	args := []string{"archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint, "-from-queue", queue, "-function", "archiver"}
	code, _, stderr := replayArchive(t, "", d, args...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "were in flight when the run began")

	require.Eventually(t, func() bool { _, f := queueCounts(t, queue); return f == 0 }, time.Minute, 100*time.Millisecond,
		"the killed run's messages come back once their hold ends")
	code, _, stderr = replayArchive(t, "", d, args...)
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, sortedIDs(x.events), archivedIDs(t, objects(t, moto.S3, bucket)), "every range archived")
	v, f := queueCounts(t, queue)
	assert.Equal(t, [2]int{0, 0}, [2]int{v, f}, "the queue drained")
}

// A dry run whose terminal closes (SIGHUP) stops as Ctrl-C does: every
// message is visible again the moment it exits, however long its hold.
func TestReplayArchiveHangUpReleasesTheQueue(t *testing.T) {
	const n = 3
	x := newExpired(t, n)
	queue := moto.CreateQueue(t, nil)
	x.sendRanges(t, queue)
	if signal.Ignored(syscall.SIGHUP) {
		// The tests run under nohup (or a CI runner that ignores SIGHUP):
		// the child would inherit that. A handler of this process is
		// reset to the default action by the child's exec, an ignored
		// signal is not: catch it here while the child starts.
		caught := make(chan os.Signal, 1)
		signal.Notify(caught, syscall.SIGHUP)
		defer signal.Stop(caught)
	}
	child := startChild(t, "-dry-run", "archive", "-from-queue", queue, "-hold", "3600")
	require.NoError(t, child.Process.Signal(syscall.SIGHUP))
	err := child.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the run ends on the signal with an error status")
	assert.Equal(t, 1, exit.ExitCode(), "exited, not killed by the signal")
	v, f := queueCounts(t, queue)
	assert.Equal(t, [2]int{n, 0}, [2]int{v, f}, "every message visible again")
}

// Under nohup (SIGHUP ignored from the start) a closed terminal stops
// nothing: the run goes on to its end. (Found by review: registering
// SIGHUP undid nohup.)
func TestReplayArchiveUnderNohupIgnoresHangUp(t *testing.T) {
	const n = 3
	x := newExpired(t, n)
	queue := moto.CreateQueue(t, nil)
	x.sendRanges(t, queue)
	nohup, err := exec.LookPath("nohup")
	require.NoError(t, err, "nohup (coreutils) is on every machine of this kind")
	child := startChildUnder(t, []string{nohup}, "-dry-run", "archive", "-from-queue", queue)
	require.NoError(t, child.Process.Signal(syscall.SIGHUP))
	require.NoError(t, child.Wait(), "the run went on to its end and exited 0")
	v, f := queueCounts(t, queue)
	assert.Equal(t, [2]int{n, 0}, [2]int{v, f}, "every message visible again")
}

// While a run lasts longer than its hold, it renews the hold of what it
// keeps: a dry run of eight slow ranges (longer than the 5 s hold,
// renewed every 0.5 s: 4.5 s of slack on a loaded machine) and
// five parked records receives each message once (moto's
// ApproximateReceiveCount is 2 after the test's own receive).
func TestReplayArchiveRenewsItsHold(t *testing.T) {
	const n = 8
	x := newExpired(t, n)
	queue := moto.CreateQueue(t, nil)
	for range 5 {
		sendAll(t, queue, `{"reason":"archive: malformed TTL record: no old image","record":{}}`)
	}
	x.sendRanges(t, queue)
	layer := &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true, delay: 800 * time.Millisecond}
	r := slowReplayer(t, nil, io.Discard)
	r.c.streams = layer
	r.hold, r.renewEvery = 5, 500*time.Millisecond
	start := time.Now()
	require.NoError(t, r.drain(context.Background(), moto.SQS, queue, true))
	require.Greater(t, time.Since(start), 5*time.Second, "the run outlasted its hold (else this test shows nothing)")
	assert.Equal(t, n, r.ranges)
	assert.Equal(t, 5, r.parked)
	msgs, err := moto.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
	require.NoError(t, err)
	more, err := moto.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
	require.NoError(t, err)
	all := append(msgs.Messages, more.Messages...)
	require.Len(t, all, n+5, "every message visible again after the dry run")
	for _, m := range all {
		assert.Equal(t, "2", m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)], "received once by the run: %s", aws.ToString(m.Body))
	}
}

// A range holding a TTL deletion that can never be archived (an item of
// a tenant's partition that is no event): its message is the only
// description of that record, so the drain parks the record on the queue
// with its content, as the archiver does, before it deletes the message.
// (Found by review: the record was logged and its range's message
// deleted: its only copy was on the operator's terminal.)
func TestReplayArchiveParksWhatARangeCannotArchive(t *testing.T) {
	ctx := context.Background()
	x := newExpired(t, 2)
	key := map[string]types.AttributeValue{
		schema.AttrUserID:           &types.AttributeValueMemberS{Value: "tenant-a"},
		schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: "2026-01-01T00:00:00.000Z#not-an-event"},
	}
	_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(x.table), Item: key})
	require.NoError(t, err)
	_, err = db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(x.table), Key: key})
	require.NoError(t, err)
	x.records = streamAll(t, x, 6)

	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	sendAll(t, queue, x.failure(t, 2, 5))
	// The park's answer is lost, and the SDK sends it again: two copies,
	// the first one's id never known.
	d := &deps{streams: &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}, queue: sentTwice{moto.SQS}}
	code, _, stderr := replayArchive(t, "", d, "archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint, "-from-queue", queue, "-function", "archiver")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "2 events archived from 1 ranges")
	assert.Contains(t, stderr, "1 records of the ranges can never be archived: parked on the queue")
	assert.NotContains(t, stderr, "messages are records the archiver parked", "the record this run parked (both copies), met on the queue, is not counted again")
	assert.Equal(t, sortedIDs(x.events), archivedIDs(t, objects(t, moto.S3, bucket)))

	msgs, err := moto.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 2, "the range's message deleted, the record parked (twice)")
	for _, msg := range msgs.Messages {
		m, err := parseFailure(json.RawMessage(aws.ToString(msg.Body)))
		require.NoError(t, err)
		assert.Nil(t, m.Info)
		assert.Contains(t, m.Reason, archive.ErrMalformed.Error())
		assert.Contains(t, string(m.Record), "not-an-event", "parked with its content")
		_, err = moto.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queue), ReceiptHandle: msg.ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
	}

	// The next run counts them as what they are now: parked records.
	code, _, stderr = replayArchive(t, "", d, "archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint, "-from-queue", queue, "-function", "archiver")
	assert.Equal(t, 1, code, "left for a person: %s", stderr)
	assert.Contains(t, stderr, "2 messages are records the archiver parked", stderr)
}

// sentTwice is a failure queue whose SendMessage takes effect twice, as
// one whose answer was lost and that the SDK sent again: it answers the
// second copy only.
type sentTwice struct{ failureQueue }

func (q sentTwice) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if _, err := q.failureQueue.SendMessage(ctx, in, optFns...); err != nil {
		return nil, err
	}
	return q.failureQueue.SendMessage(ctx, in, optFns...)
}

// streamAll reads the first n records of x's stream.
func streamAll(t *testing.T, x expired, n int) []streamtypes.Record {
	t.Helper()
	ctx := context.Background()
	streams := ddblocal.NewStreamsClient(db.Endpoint)
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(x.arn), ShardId: aws.String(x.shard), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
	require.NoError(t, err)
	var recs []streamtypes.Record
	iter := it.ShardIterator
	for len(recs) < n {
		out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		require.NoError(t, err)
		recs = append(recs, out.Records...)
		iter = out.NextShardIterator
	}
	require.Len(t, recs, n)
	return recs
}

// A failure queue shared with another stream consumer (say the delivery
// function's): the drain replays the archiver's records only, leaves the
// other function's on the queue for that consumer's own replay, and says
// so; without -function the first record's function is the one.
func TestReplayArchiveLeavesAnotherFunctionsRecords(t *testing.T) {
	const n = 3
	x := newExpired(t, n)
	of := func(i int, arn string) string {
		var rec streampoll.FailureRecord
		require.NoError(t, json.Unmarshal([]byte(x.failure(t, i, i)), &rec))
		rec.RequestContext.FunctionArn = arn
		b, err := json.Marshal(rec)
		require.NoError(t, err)
		return string(b)
	}
	const archiver = "arn:aws:lambda:us-east-1:123456789012:function:triggers-dev-data-Archiver"
	delivery := of(n+2, "arn:aws:lambda:us-east-1:123456789012:function:triggers-dev-api-StreamConsumer:live")
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	sendAll(t, queue, delivery, of(n, archiver), of(n+1, archiver+":live"))
	d := &deps{streams: &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}, queue: moto.SQS}
	code, _, stderr := replayArchive(t, "", d, "archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint, "-from-queue", queue,
		"-function", "triggers-dev-data-Archiver")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "2 events archived from 2 ranges")
	assert.Contains(t, stderr, "1 of them are failure records of another function")
	assert.ElementsMatch(t, sortedIDs(x.events[:2]), archivedIDs(t, objects(t, moto.S3, bucket)))
	msgs, err := moto.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 1)
	assert.JSONEq(t, delivery, aws.ToString(msgs.Messages[0].Body), "the other consumer's record left as it was")

	// Standard input, without -function: the first record's function.
	code, _, stderr = replayArchive(t, of(n, archiver)+delivery, d, "archive", "-bucket", bucket, "-s3-endpoint-url", moto.Endpoint)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "1 events archived from 1 ranges")
	assert.Contains(t, stderr, "another function than "+archiver)
}

// refusingRelease is moto's SQS refusing to make messages visible again
// (VisibilityTimeout 0): a clean-up that fails.
type refusingRelease struct{ failureQueue }

func (q refusingRelease) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if len(in.Entries) > 0 && in.Entries[0].VisibilityTimeout == 0 {
		return nil, errors.New("AccessDenied: not allowed")
	}
	return q.failureQueue.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

// A clean-up SQS refuses is reported, with the hold the messages stay
// hidden for, and the run exits 1, not 0 as if the queue were as it was.
// (Found by review: the clean-up dropped its errors.)
func TestReplayArchiveReportsAFailedCleanUp(t *testing.T) {
	x := newExpired(t, 2)
	queue := moto.CreateQueue(t, nil)
	sendAll(t, queue, x.failure(t, 2, 2), x.failure(t, 3, 3))
	d := &deps{streams: &streamsLayer{StreamsAPI: ddblocal.NewStreamsClient(db.Endpoint), ttl: true}, queue: refusingRelease{moto.SQS}}
	code, out, stderr := replayArchive(t, "", d, "-dry-run", "archive", "-from-queue", queue, "-hold", "10")
	assert.Equal(t, 1, code, stderr)
	assert.Equal(t, 2, strings.Count(out, `"key":"expired/`), "the dry run itself went through:\n%s", out)
	assert.Contains(t, stderr, "2 messages could not be made visible again")
	assert.Contains(t, stderr, "AccessDenied")
	assert.Contains(t, stderr, "(-hold, 10 s)")
	require.Eventually(t, func() bool { v, f := queueCounts(t, queue); return v == 2 && f == 0 }, 30*time.Second, 100*time.Millisecond,
		"back once the hold ends")
}
