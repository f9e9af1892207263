package archive_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/archive"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/schema"
)

// asTTLDeletions makes the REMOVE records of ev look as DynamoDB's TTL
// makes them (DynamoDB Local's TTL deletion is unreliable, so the tests
// delete the items themselves): the service's user identity, and REMOVE
// where DynamoDB Local now and then names a deletion
// UNKNOWN_TO_SDK_VERSION.
func asTTLDeletions(ev *events.DynamoDBEvent) {
	for i := range ev.Records {
		r := &ev.Records[i]
		if r.EventName == "UNKNOWN_TO_SDK_VERSION" && len(r.Change.NewImage) == 0 && len(r.Change.OldImage) > 0 {
			r.EventName = "REMOVE"
		}
		if r.EventName == "REMOVE" {
			ttlIdentity(r)
		}
	}
}

// archived reads every object under prefix of bucket and returns each
// line, by event id (an event archived twice has two lines).
func archived(t require.TestingT, client *s3.Client, bucket, prefix string) map[string][]string {
	ctx := context.Background()
	out := map[string][]string{}
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		for _, o := range page.Contents {
			obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			require.NoError(t, err)
			body, err := io.ReadAll(obj.Body)
			obj.Body.Close()
			require.NoError(t, err)
			zr, err := gzip.NewReader(bytes.NewReader(body))
			require.NoError(t, err, "the object is gzip")
			raw, err := io.ReadAll(zr)
			require.NoError(t, err)
			for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
				var e struct {
					ID string `json:"event_id"`
				}
				require.NoError(t, json.Unmarshal([]byte(l), &e), l)
				out[e.ID] = append(out[e.ID], l)
			}
		}
	}
	return out
}

// outageRun is what runOutage saw.
type outageRun struct {
	want     map[string]string   // event id -> the API's JSON, for every deleted event
	got      map[string][]string // event id -> its archived lines
	gaveUp   []streampoll.FailureRecord
	faults   *mototest.FaultClient
	logs     string // the archiver's
	pollLogs string
	invoked  int
}

// runOutage ingests 24 events (3 tenants, 2 days) through the API,
// deletes them as TTL would, and runs the archiver under the local stream
// poller with o while S3 (moto) fails the first outage PutObject calls
// (503 SlowDown, which the SDK retries: 4 attempts a call, as in Lambda).
// It stops once every event is archived, or once the poller has given up
// on a record and everything else is archived.
func runOutage(t *testing.T, outage int, o streampoll.PollOptions) outageRun {
	t.Helper()
	w := newWorld(t)
	run := outageRun{want: map[string]string{}}
	for day := range 2 {
		for _, tenant := range []string{"acme", "globex", "initech"} {
			for i := range 4 {
				id := w.post(tenant, fmt.Sprintf(`{"event_type":"outage.test","payload":{"day":%d,"i":%d,"big":123456789012345678901234567890123456}}`, day, i), nil)
				run.want[id] = w.get(tenant, id)
			}
		}
		w.now = w.now.Add(2 * time.Second) // the next UTC day
	}
	w.deleteItems()

	bucket := moto.CreateBucket(t)
	run.faults = &mototest.FaultClient{}
	run.faults.Fail("PutObject", outage)
	client := moto.S3Client(func(so *s3.Options) { so.HTTPClient = run.faults; so.Retryer = mototest.FastRetryer(4)() })
	logs, pollLogs := &syncio.Buffer{}, &syncio.Buffer{}
	a, err := archive.New(archive.Config{Putter: client, Bucket: bucket, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	arn, err := streampoll.LatestStreamARN(ctx, db.Client, w.table)
	require.NoError(t, err)
	reader := streampoll.NewStreamReader(ddblocal.NewStreamsClient(db.Endpoint), arn, streampoll.StreamReaderOptions{Limit: 5, Region: ddb.LocalRegion})
	var mu sync.Mutex
	o.Interval = 5 * time.Millisecond
	o.Logger = slog.New(slog.NewJSONHandler(pollLogs, nil))
	o.OnFailure = func(_ context.Context, rec streampoll.FailureRecord) error {
		mu.Lock()
		defer mu.Unlock()
		run.gaveUp = append(run.gaveUp, rec)
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- reader.Poll(ctx, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			asTTLDeletions(&ev)
			mu.Lock()
			run.invoked++
			mu.Unlock()
			payload, err := json.Marshal(ev) // as Lambda hands it over
			if err != nil {
				return events.DynamoDBEventResponse{}, err
			}
			return a.HandleJSON(ctx, payload)
		}, o)
	}()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mu.Lock()
		lost := len(run.gaveUp)
		mu.Unlock()
		got := archived(c, moto.S3, bucket, "expired/")
		assert.GreaterOrEqual(c, len(got)+lost, len(run.want), "events archived or given up on so far")
		assert.GreaterOrEqual(c, run.faults.Seen("PutObject"), outage+1, "S3 recovered")
	}, 2*time.Minute, 100*time.Millisecond, "archiver logs: %s", logs.String())
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	run.got = archived(t, moto.S3, bucket, "expired/")
	run.logs, run.pollLogs = logs.String(), pollLogs.String()
	return run
}

// The archiver runs under the local stream poller with the event source
// mapping's settings (retries without limit until the maximum record
// age: 20 hours, far beyond this test), and S3 fails 200 PutObject calls
// in a row before it recovers: tens of retries of the same batch. Nothing
// is lost: every TTL-deleted event ends up in the archive as exactly the
// API's JSON of it, and the poller never gave up on a record.
func TestArchiveSurvivesS3Outage(t *testing.T) {
	const outage = 200
	run := runOutage(t, outage, streampoll.PollOptions{MaxRetries: -1, MaxRecordAge: 20 * time.Hour})

	assert.Equal(t, outage, run.faults.Failed("PutObject"), "every injected failure was met")
	assert.Contains(t, run.logs, "SlowDown", "the archiver reported the failed objects")
	assert.Empty(t, run.gaveUp, "no record given up on")
	assert.NotContains(t, run.pollLogs, "skipping")
	require.Len(t, run.got, len(run.want), "every deleted event archived")
	dups := 0
	for id, lines := range run.got {
		require.Contains(t, run.want, id, "only the deleted events")
		for _, l := range lines {
			assert.Equal(t, run.want[id], l, "the API's JSON of %s, byte for byte", id)
		}
		dups += len(lines) - 1
	}
	t.Logf("%d events archived after %d failed PutObject calls; %d lines repeated by retries (at least once); %d invocations", len(run.got), outage, dups, run.invoked)
}

// The same outage under the mapping's former settings (10 retries) loses
// events: the poller gives up on records while S3 is still down, and
// they never reach the archive. This is what the test above guards
// against, and why the construct retries until the maximum record age.
func TestTenRetriesLoseEventsInTheSameOutage(t *testing.T) {
	run := runOutage(t, 200, streampoll.PollOptions{MaxRetries: 10})
	require.NotEmpty(t, run.gaveUp, "records given up on during the outage")
	assert.Less(t, len(run.got), len(run.want), "events missing from the archive")
	for _, rec := range run.gaveUp {
		assert.Equal(t, streampoll.ConditionRetriesExhausted, rec.RequestContext.Condition)
		require.NotNil(t, rec.BatchInfo)
		assert.NotEmpty(t, rec.BatchInfo.StartSequenceNumber)
	}
}

// A record that can never be archived is parked on the dead-letter queue
// (SQS, moto) with the reason and the record as Lambda delivered it, and
// the rest of the batch is archived: the shard moves on. When parking
// fails too, the record is a batch item failure, retried.
func TestMalformedRecordParked(t *testing.T) {
	ctx := context.Background()
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	sqsFaults := &mototest.FaultClient{}
	q := moto.SQSClient(func(o *sqs.Options) { o.HTTPClient = sqsFaults; o.Retryer = mototest.FastRetryer(2)() })
	logs := &syncio.Buffer{}
	a, err := archive.New(archive.Config{Putter: moto.S3, Bucket: bucket, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		DeadLetter: streamconsumer.SQSDeadLetter{Client: q, QueueURL: queue}})
	require.NoError(t, err)

	good := removed("20", image("acme", "e1", "2026-01-31T10:00:00Z"))
	noPayload := image("acme", "e2", "2026-01-31T10:00:01Z")
	delete(noPayload, schema.AttrPayload)
	bad := removed("21", noPayload)
	later := removed("22", image("acme", "e3", "2026-01-31T10:00:02Z"))
	raw, err := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{good, bad, later}})
	require.NoError(t, err)

	resp, err := a.HandleJSON(ctx, raw)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "parked, so the shard moves on")
	got := archived(t, moto.S3, bucket, "expired/")
	assert.Len(t, got, 2)
	assert.Contains(t, got, "e1")
	assert.Contains(t, got, "e3")
	assert.Contains(t, logs.String(), "malformed TTL record parked in the dead-letter queue")

	parked := onlyParked(t, queue)
	assert.Contains(t, parked.Reason, `attribute "payload" is missing`)
	assert.Equal(t, "21", parked.Record.Change.SequenceNumber)
	assert.Equal(t, "e2", parked.Record.Change.OldImage[schema.AttrEventID].String(), "the record itself, to act on")

	// SQS down as well: the record fails the batch and is retried.
	sqsFaults.Fail("SendMessage", -1)
	resp, err = a.HandleJSON(ctx, raw)
	require.NoError(t, err)
	assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: "21"}}, resp.BatchItemFailures)
	assert.True(t, strings.Contains(logs.String(), "park a malformed record"), logs.String())
}

// A malformed record after a record whose object could not be written
// is not parked yet: Lambda retries from the failed record, so the
// malformed one comes back with the retry and is parked once, when the
// batch goes through, not once per retry. One before the failed record
// is parked at once (the retry starts after it). Found by review: a
// bad record behind an S3 outage was parked on every retry, for up to
// the mapping's 20 hours.
func TestMalformedRecordParkedOnceAcrossRetries(t *testing.T) {
	ctx := context.Background()
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	s3Faults := &mototest.FaultClient{}
	a, err := archive.New(archive.Config{
		Putter: moto.S3Client(func(o *s3.Options) { o.HTTPClient = s3Faults; o.Retryer = mototest.FastRetryer(2)() }),
		Bucket: bucket, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		DeadLetter: streamconsumer.SQSDeadLetter{Client: moto.SQS, QueueURL: queue}})
	require.NoError(t, err)
	var seqs []string // every record parked so far
	parked := func() []string {
		t.Helper()
		out, err := moto.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
		require.NoError(t, err)
		for _, m := range out.Messages {
			var p struct {
				Record events.DynamoDBEventRecord `json:"record"`
			}
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &p))
			seqs = append(seqs, p.Record.Change.SequenceNumber)
			_, err := moto.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queue), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
		sort.Strings(seqs)
		return seqs
	}
	noPayload := func(id string) map[string]events.DynamoDBAttributeValue {
		img := image("acme", id, "2026-01-31T10:00:01Z")
		delete(img, schema.AttrPayload)
		return img
	}

	// An earlier malformed record (9), an object that fails (100, 1000),
	// a malformed record after it (101): Lambda's sequence numbers compare
	// as numbers (9 < 100 < 101 < 1000).
	batch := []events.DynamoDBEventRecord{
		removed("9", noPayload("e0")),
		removed("100", image("acme", "e1", "2026-01-31T10:00:00Z")),
		removed("101", noPayload("e2")),
		removed("1000", image("acme", "e3", "2026-01-31T10:00:02Z")),
	}
	s3Faults.Fail("PutObject", -1)
	resp, err := a.Handle(ctx, events.DynamoDBEvent{Records: batch})
	require.NoError(t, err)
	assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: "100"}, {ItemIdentifier: "1000"}}, resp.BatchItemFailures)
	// Lambda's retries start at 100, while S3 is still down.
	for range 3 {
		resp, err = a.Handle(ctx, events.DynamoDBEvent{Records: batch[1:]})
		require.NoError(t, err)
		assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: "100"}, {ItemIdentifier: "1000"}}, resp.BatchItemFailures)
	}
	assert.Equal(t, []string{"9"}, parked(), "the record before the failure parked once; the one after not yet")
	s3Faults.Recover("PutObject")
	resp, err = a.Handle(ctx, events.DynamoDBEvent{Records: batch[1:]})
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Equal(t, []string{"101", "9"}, parked(), "each malformed record parked once")
	got := archived(t, moto.S3, bucket, "expired/")
	assert.Len(t, got, 2)
	assert.Contains(t, got, "e1")
	assert.Contains(t, got, "e3")
}

// What is parked is the record itself: through HandleJSON byte for byte
// as Lambda delivered it (fields aws-lambda-go does not know included),
// through Handle as aws-lambda-go encodes it. A record aws-lambda-go
// cannot encode (an attribute value whose content does not match its
// type) is not parked but retried, and does not panic.
func TestParkedRecordContent(t *testing.T) {
	ctx := context.Background()
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	logs := &syncio.Buffer{}
	a, err := archive.New(archive.Config{Putter: moto.S3, Bucket: bucket, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		DeadLetter: streamconsumer.SQSDeadLetter{Client: moto.SQS, QueueURL: queue}})
	require.NoError(t, err)
	receive := func() []string {
		t.Helper()
		out, err := moto.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
		require.NoError(t, err)
		var records []string
		for _, m := range out.Messages {
			var parked struct {
				Record json.RawMessage `json:"record"`
			}
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &parked))
			records = append(records, string(parked.Record))
			_, err := moto.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queue), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
		return records
	}

	noImage := removed("31", nil)
	raw := mustMarshal(t, noImage)
	withExtra := append(bytes.TrimSuffix(raw, []byte("}")), []byte(`,"extra":{"kept":true}}`)...)
	resp, err := a.HandleJSON(ctx, []byte(`{"Records":[`+string(withExtra)+`]}`))
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Equal(t, []string{string(withExtra)}, receive(), "as delivered, the unknown field too")

	resp, err = a.Handle(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{noImage}})
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.Equal(t, []string{string(raw)}, receive(), "as aws-lambda-go encodes it")

	odd := image("acme", "e1", "2026-01-31T10:00:00Z")
	odd["x"] = events.DynamoDBAttributeValue{} // binary without content
	resp, err = a.Handle(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{removed("32", odd)}})
	require.NoError(t, err)
	assert.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: "32"}}, resp.BatchItemFailures)
	assert.Empty(t, receive())
	assert.Contains(t, logs.String(), "encode the stream record")
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A malformed record too large for the failure queue (the construct's
// queue takes SQS's default of 256 KiB; a TTL deletion's old image may be
// a 400 KB item) is parked all the same, without its images: the reason
// says so, and the keys and sequence number name it. (Found by review:
// the park failed on every retry, so the record held its shard's TTL
// deletions up for the mapping's 20 hours, which parking is there to
// prevent.)
func TestOversizedMalformedRecordParked(t *testing.T) {
	ctx := context.Background()
	bucket := moto.CreateBucket(t)
	queue := moto.CreateQueue(t, map[string]string{"MaximumMessageSize": "262144"})
	a, err := archive.New(archive.Config{Putter: moto.S3, Bucket: bucket, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		DeadLetter: streamconsumer.SQSDeadLetter{Client: moto.SQS, QueueURL: queue}})
	require.NoError(t, err)

	huge := image("acme", "e2", "2026-01-31T10:00:01Z")
	delete(huge, schema.AttrPayload)
	huge["blob"] = events.NewStringAttribute(strings.Repeat("x", 300<<10))
	bad := removed("21", huge)
	good := removed("22", image("acme", "e3", "2026-01-31T10:00:02Z"))
	raw, err := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{bad, good}})
	require.NoError(t, err)

	resp, err := a.HandleJSON(ctx, raw)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "parked, so the shard moves on")
	assert.Contains(t, archived(t, moto.S3, bucket, "expired/"), "e3")

	parked := onlyParked(t, queue)
	assert.Contains(t, parked.Reason, `attribute "payload" is missing`)
	assert.Contains(t, parked.Reason, "too large for the queue")
	assert.Equal(t, "21", parked.Record.Change.SequenceNumber)
	assert.Equal(t, "acme", parked.Record.Change.Keys[schema.AttrUserID].String(), "the keys name the item")
	assert.Empty(t, parked.Record.Change.OldImage)
}

// parkedRecord is a failure queue message: the record and why it was
// parked.
type parkedRecord struct {
	Reason string                     `json:"reason"`
	Record events.DynamoDBEventRecord `json:"record"`
}

// onlyParked receives queue's messages and requires exactly one, a parked
// record.
func onlyParked(t *testing.T, queue string) parkedRecord {
	t.Helper()
	msgs, err := moto.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 1)
	var parked parkedRecord
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(msgs.Messages[0].Body)), &parked))
	return parked
}

// A TTL deletion in an events partition whose key is no tenant id (an
// item the API never wrote: a 1,000-character partition key) can never be
// archived: its object key would pass S3's 1,024 bytes. It is parked like
// any malformed record and the rest of the batch is archived. Found by
// review: it was converted, its PutObject refused (KeyTooLongError) on
// every retry, and the shard waited behind it until the maximum record
// age, then the replay failed on it the same way. moto does not enforce
// S3's key limit, so the test also checks every key written against it.
func TestRecordOfNoTenantParked(t *testing.T) {
	ctx := context.Background()
	bucket, queue := moto.CreateBucket(t), moto.CreateQueue(t, nil)
	logs := &syncio.Buffer{}
	a, err := archive.New(archive.Config{Putter: moto.S3, Bucket: bucket, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		DeadLetter: streamconsumer.SQSDeadLetter{Client: moto.SQS, QueueURL: queue}})
	require.NoError(t, err)

	long := removed("31", image(strings.Repeat("a", 1000), "e2", "2026-01-31T10:00:01Z"))
	raw, err := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		removed("30", image("acme", "e1", "2026-01-31T10:00:00Z")), long, removed("32", image("acme", "e3", "2026-01-31T10:00:02Z")),
	}})
	require.NoError(t, err)
	resp, err := a.HandleJSON(ctx, raw)
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "parked, so the shard moves on; logs: %s", logs.String())
	got := archived(t, moto.S3, bucket, "expired/")
	assert.Len(t, got, 2)
	assert.Contains(t, got, "e1")
	assert.Contains(t, got, "e3")
	list, err := moto.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	for _, o := range list.Contents {
		assert.LessOrEqual(t, len(aws.ToString(o.Key)), 1024, "S3 refuses longer keys (KeyTooLongError)")
	}
	parked := onlyParked(t, queue)
	assert.Contains(t, parked.Reason, "is not a tenant id")
	assert.Equal(t, "31", parked.Record.Change.SequenceNumber)
}
