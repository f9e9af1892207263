package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/archive"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
)

// archivePutter writes archive objects; *s3.Client implements it.
type archivePutter = archive.Putter

// failureQueue is the part of the SQS client that drains the archive's
// failure queue (-from-queue); *sqs.Client implements it.
type failureQueue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// archiveChunk is how many TTL deletions of a range one archiver call
// takes: a range is cut into chunks by count, in stream order, so the
// same range always gives the same objects (their keys derive from the
// sequence numbers they hold).
const archiveChunk = 1000

// receiveVisibility hides a received failure message from other readers
// while it is replayed; a message whose replay fails comes back after it.
const receiveVisibility = 300

// keepVisibility hides a message the run leaves on the queue (a parked
// record; every message of a dry run) for the rest of the run, SQS's
// maximum (12 h): however long the run, it does not come back to it, so
// the run ends at the first empty receive and counts it once. The run's
// end makes it visible again. SQS refuses a visibility that ends more
// than 12 hours after the receive, so the run asks for what is left of
// them, less keepMargin (keepFor).
const keepVisibility = 12 * 60 * 60

// keepMargin is what keepFor leaves of the 12 hours, for the time between
// SQS's receive and the run's clock reading before it.
const keepMargin = 60

// keepFor returns the visibility, in seconds, that hides a message
// received by a ReceiveMessage call made at asked for as long as SQS
// allows: keepVisibility from the receive, less keepMargin.
func keepFor(asked, now time.Time) int32 {
	elapsed := int32(now.Sub(asked).Seconds()) + 1
	return max(keepVisibility-keepMargin-elapsed, 0)
}

// s3AttemptTimeout bounds one attempt of a PutObject of the replay, its
// upload included: a chunk of archiveChunk events makes objects of many
// megabytes, sent from an operator's machine (the configuration's own
// bound, ddb.DefaultAttemptTimeout, is meant for DynamoDB requests).
const s3AttemptTimeout = 5 * time.Minute

// archiveReplayer re-archives the ranges of failure records.
type archiveReplayer struct {
	c   clients
	a   *archive.Archiver
	log *slog.Logger
	// totals
	archived, ranges, parked, unarchivable int
	// lostRanges counts the ranges replayed whose records had aged out of
	// the stream in part or whole (readRange): what the stream still had
	// was archived, the rest is logged as lost.
	lostRanges int
	// visibility is the receive's VisibilityTimeout in seconds (0:
	// receiveVisibility).
	visibility int32
	// notReplayed counts the failure records whose replay failed or
	// that are not failure records at all: each is logged with its
	// error, left on the queue, and the run goes on with the others.
	notReplayed int
}

func runArchive(ctx context.Context, c clients, cfg aws.Config, d *deps, args []string, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger, dryRun bool, sqsClient func() *sqs.Client) int {
	fs := flag.NewFlagSet("archive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bucket := fs.String("bucket", "", "the archive bucket's name (output ArchiveBucketName of the data stack, or of the API stack when it archives an imported events table; required unless -dry-run)")
	prefix := fs.String("prefix", contract.DefaultArchivePrefix, "the archive's key prefix (ExpiredEventsArchiveProps.Prefix)")
	s3Endpoint := fs.String("s3-endpoint-url", "", "S3 endpoint (an S3-compatible local server, say)")
	fromQueue := fs.String("from-queue", "", "drain this queue (the archive's failure queue) instead of reading failure records on standard input: each message replayed is deleted")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "triggers-replay: archive takes flags only, not %q\n%s\n", fs.Args(), usage)
		return 2
	case *bucket == "" && !dryRun:
		fmt.Fprintf(stderr, "triggers-replay: archive needs -bucket (the archive bucket's name), or -dry-run\n%s\n", usage)
		return 2
	}
	putter := d.putter
	name := *bucket
	switch {
	case dryRun:
		putter = &printPutter{w: stdout}
		if name == "" {
			name = "dry-run"
		}
	case putter == nil:
		putter = archiveS3(cfg, *s3Endpoint)
	}
	a, err := archive.New(archive.Config{Putter: putter, Bucket: name, Prefix: *prefix, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "triggers-replay: %v\n", err)
		return 2
	}
	r := &archiveReplayer{c: c, a: a, log: log}
	if *fromQueue != "" {
		q := d.queue
		if q == nil {
			q = sqsClient()
		}
		err = r.drain(ctx, q, *fromQueue, dryRun)
	} else {
		err = r.fromInput(ctx, stdin)
	}
	verb := "archived"
	if dryRun {
		verb = "printed (dry run)"
	}
	var usageErr *usageError
	switch {
	case errors.As(err, &usageErr):
		fmt.Fprintf(stderr, "triggers-replay: %v\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "triggers-replay: %v (%d events %s from %d ranges before the error; run again: the same range writes the same objects)\n", err, r.archived, verb, r.ranges)
		return 1
	}
	fmt.Fprintf(stderr, "triggers-replay: %d events %s from %d ranges\n", r.archived, verb, r.ranges)
	code := 0
	if r.parked > 0 {
		fmt.Fprintf(stderr, "triggers-replay: %d messages are records the archiver parked because they can never be archived (the reason and the record are in each message): they are left on the queue for you; docs/runbook.md, \"Archive failures not empty\"\n", r.parked)
		code = 1
	}
	if r.unarchivable > 0 {
		fmt.Fprintf(stderr, "triggers-replay: %d records of the ranges can never be archived (logged above with their content)\n", r.unarchivable)
		code = 1
	}
	if r.lostRanges > 0 {
		fmt.Fprintf(stderr, "triggers-replay: %d ranges had aged out of the stream (24 h) in part or whole before the replay: what the stream still had was archived, the rest is lost to the archive (logged above as LOST FROM THE STREAM, with the times of the deletions; -from-queue deleted their messages: nothing more can be read for them). The last resort is a PITR restore (docs/runbook.md, \"Archive failures not empty\")\n", r.lostRanges)
		if code == 0 {
			code = exitLost
		}
	}
	if r.notReplayed > 0 {
		fmt.Fprintf(stderr, "triggers-replay: %d messages were not replayed (logged above with the error; from -from-queue they are left on the queue): fix the cause and run again; a range past the stream's 24 h is lost to the archive (docs/runbook.md, \"Archive failures not empty\")\n", r.notReplayed)
		code = 1
	}
	return code
}

// fromInput replays the failure records on standard input: one or more
// JSON documents, each a failure record, or an array of them or of their
// JSON as strings (aws sqs receive-message --query 'Messages[].Body').
func (r *archiveReplayer) fromInput(ctx context.Context, in io.Reader) error {
	dec := json.NewDecoder(in)
	var msgs []json.RawMessage
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return &usageError{fmt.Sprintf("standard input is not failure records (JSON): %v", err)}
		}
		more, err := expand(v)
		if err != nil {
			return &usageError{err.Error()}
		}
		msgs = append(msgs, more...)
	}
	if len(msgs) == 0 {
		return &usageError{"no failure record on standard input: pipe the archive failure queue's messages, or use -from-queue"}
	}
	// Every input is checked before any range is replayed.
	parsed := make([]failureMessage, len(msgs))
	for i, raw := range msgs {
		m, err := parseFailure(raw)
		if err != nil {
			return &usageError{fmt.Sprintf("input %d: %v", i+1, err)}
		}
		parsed[i] = m
	}
	for i, m := range parsed {
		if m.Info == nil {
			r.parked++
			r.log.Warn("parked record: it can never be archived", "reason", m.Reason, "record", m.Record)
			continue
		}
		if err := r.replay(ctx, *m.Info); err != nil {
			if ctx.Err() != nil {
				return err
			}
			// One range that fails (past the stream's 24 h, say) does
			// not keep the others from being archived.
			r.notReplayed++
			r.log.Error("range not replayed", "input", i+1, "shard_id", m.Info.ShardID,
				"start_sequence_number", m.Info.StartSequenceNumber, "end_sequence_number", m.Info.EndSequenceNumber, "error", err.Error())
		}
	}
	return nil
}

// expand returns v's failure records: v itself, or the elements of an
// array, each an object or a string holding one.
func expand(v json.RawMessage) ([]json.RawMessage, error) {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || t[0] != '[' {
		return []json.RawMessage{v}, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(t, &elems); err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(elems))
	for _, e := range elems {
		var s string
		if json.Unmarshal(e, &s) == nil {
			e = json.RawMessage(s)
		}
		out = append(out, e)
	}
	return out, nil
}

// parseFailure decodes one failure queue message.
func parseFailure(raw json.RawMessage) (failureMessage, error) {
	var m failureMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("not a failure record: %v", err)
	}
	if m.Info == nil && m.Reason == "" {
		return m, errors.New("no DDBStreamBatchInfo: pass Lambda's on-failure records from the archive's failure queue")
	}
	if in := m.Info; in != nil && (in.StreamArn == "" || in.ShardID == "" || in.StartSequenceNumber == "" || in.EndSequenceNumber == "") {
		return m, errors.New("DDBStreamBatchInfo lacks streamArn, shardId, startSequenceNumber or endSequenceNumber")
	}
	return m, nil
}

// archiveS3 is the replay's S3 client: cfg's, with an attempt bound for
// uploads (s3AttemptTimeout) and, with endpoint, path-style requests to it.
func archiveS3(cfg aws.Config, endpoint string) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(s3AttemptTimeout)
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	})
}

// drain replays every message of the failure queue url and deletes each
// once replayed; parked records, messages that are no failure records and
// ranges whose replay failed (each logged with its error) are left there,
// visible again at the end, and the run goes on with the other messages:
// one range past the stream's 24 h does not keep the others, on the same
// clock, from being archived. It stops at the first empty receive (a long
// poll), or when a receive brings only messages this run has seen. In a
// dry run nothing is deleted and every message is made visible again at
// the end. A message left on the queue is hidden for the rest of the run
// (keepFor: up to 12 hours after its receive, SQS's limit): with the
// receive's visibility only, a run longer than it (a dry run of many
// ranges) met the same messages again and never ended. A run that stops
// early (interrupted, an SQS error) makes the messages it received and
// did not finish visible again too, so that a run right after finds them.
func (r *archiveReplayer) drain(ctx context.Context, q failureQueue, url string, dryRun bool) error {
	var release []string            // receipt handles to make visible again at the end
	inFlight := map[string]string{} // received, neither deleted nor kept: message id -> receipt handle
	defer func() {
		for _, h := range inFlight {
			release = append(release, h)
		}
		for _, h := range release {
			_, _ = q.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(h), VisibilityTimeout: 0})
		}
	}()
	var asked time.Time // when the current receive was made
	keep := func(msg sqstypes.Message) {
		delete(inFlight, aws.ToString(msg.MessageId))
		if _, err := q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: msg.ReceiptHandle, VisibilityTimeout: keepFor(asked, time.Now())}); err != nil {
			// It comes back after the receive's visibility, and is
			// then counted once (seen), but may crowd out new ones.
			r.log.Warn("could not hide a message left on the queue for the rest of the run", "message_id", aws.ToString(msg.MessageId), "error", err.Error())
		}
		release = append(release, aws.ToString(msg.ReceiptHandle))
	}
	visibility := r.visibility
	if visibility <= 0 {
		visibility = receiveVisibility
	}
	seen := map[string]bool{}
	for {
		asked = time.Now()
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 2, VisibilityTimeout: visibility,
		})
		if err != nil {
			return fmt.Errorf("receive from %s: %w", url, err)
		}
		for _, msg := range out.Messages {
			inFlight[aws.ToString(msg.MessageId)] = aws.ToString(msg.ReceiptHandle)
		}
		fresh := 0
		for _, msg := range out.Messages {
			id := aws.ToString(msg.MessageId)
			if seen[id] {
				keep(msg) // back although kept: hide it again, count it once
				continue
			}
			seen[id] = true
			fresh++
			m, err := parseFailure(json.RawMessage(aws.ToString(msg.Body)))
			if err != nil {
				r.notReplayed++
				r.log.Error("message is no failure record: left on the queue", "message_id", id, "error", err.Error(), "body", aws.ToString(msg.Body))
				keep(msg)
				continue
			}
			if m.Info == nil {
				r.parked++
				r.log.Warn("parked record: it can never be archived; left on the queue", "message_id", id, "reason", m.Reason, "record", m.Record)
				keep(msg)
				continue
			}
			if err := r.replay(ctx, *m.Info); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("message %s (left on the queue): %w", id, err)
				}
				r.notReplayed++
				r.log.Error("range not replayed: left on the queue", "message_id", id, "shard_id", m.Info.ShardID,
					"start_sequence_number", m.Info.StartSequenceNumber, "end_sequence_number", m.Info.EndSequenceNumber, "error", err.Error())
				keep(msg)
				continue
			}
			if dryRun {
				keep(msg)
				continue
			}
			if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: msg.ReceiptHandle}); err != nil {
				return fmt.Errorf("delete message %s (replayed; deleting it again later is harmless): %w", id, err)
			}
			delete(inFlight, id)
		}
		if fresh == 0 {
			return nil
		}
	}
}

// replay re-reads the range of in from the stream and archives its TTL
// deletions with the archiver's own code, in chunks of archiveChunk.
// Records that can never be archived are logged with their content and
// counted, not written. A part of the range that had aged out of the
// stream is logged as lost and counted (lostRanges); the rest is archived
// and the replay succeeds: nothing more can be read for that range.
func (r *archiveReplayer) replay(ctx context.Context, in streampoll.BatchInfo) error {
	var ttl []events.DynamoDBEventRecord
	read := 0
	lost, err := readRange(ctx, r.c, in, func(batch []events.DynamoDBEventRecord) error {
		read += len(batch)
		for _, rec := range batch {
			_, ok, err := archive.Convert(rec)
			if err != nil {
				r.unarchivable++
				raw, _ := json.Marshal(rec)
				r.log.Error("stream record can never be archived", "sequence_number", rec.Change.SequenceNumber, "error", err.Error(), "record", json.RawMessage(raw))
				continue
			}
			if ok {
				ttl = append(ttl, rec)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for start := 0; start < len(ttl); start += archiveChunk {
		chunk := ttl[start:min(start+archiveChunk, len(ttl))]
		resp, err := r.a.Handle(ctx, events.DynamoDBEvent{Records: chunk})
		if err != nil {
			return err
		}
		if n := len(resp.BatchItemFailures); n > 0 {
			return fmt.Errorf("%d of the range's TTL deletions could not be written, from sequence number %s (see the log line above; is the bucket writable again?)", n, resp.BatchItemFailures[0].ItemIdentifier)
		}
	}
	r.archived += len(ttl)
	r.ranges++
	if len(lost) > 0 {
		r.lostRanges++
	}
	for _, g := range lost {
		// Their TTL deletions are lost to the archive: the items are gone
		// from the table too. The times bound the deletions, for a PITR
		// restore.
		from, to, _ := g.window()
		r.log.Error("LOST FROM THE STREAM: part of the range had aged out of the stream (24 h) before the replay: its TTL deletions are lost to the archive",
			"stream_arn", in.StreamArn, "lost", g.String(), "deleted_from", from, "deleted_to", to,
			"start_sequence_number", in.StartSequenceNumber, "end_sequence_number", in.EndSequenceNumber,
			"approximate_arrival_of_first_record", in.ApproximateArrivalOfFirstRecord, "approximate_arrival_of_last_record", in.ApproximateArrivalOfLastRecord)
	}
	r.log.Info("range replayed", "shard_id", in.ShardID, "start_sequence_number", in.StartSequenceNumber, "end_sequence_number", in.EndSequenceNumber,
		"records_read", read, "events_archived", len(ttl))
	return nil
}

// printPutter is the dry run's archive: it prints each object's events as
// JSON lines, {"key": ..., "event": {...}}, instead of writing them.
type printPutter struct {
	mu sync.Mutex
	w  io.Writer
}

// PutObject implements archive.Putter.
func (p *printPutter) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	zr, err := gzip.NewReader(in.Body)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		key, _ := json.Marshal(aws.ToString(in.Key))
		fmt.Fprintf(&out, "{\"key\":%s,\"event\":%s}\n", key, line)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err = p.w.Write(out.Bytes())
	return &s3.PutObjectOutput{}, err
}
