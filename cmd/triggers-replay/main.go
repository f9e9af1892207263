// Command triggers-replay puts events back on their way after a stream
// event source mapping gave up on them. Two consumers, three sources:
//
//	# delivery (docs/runbook.md, "Stream failures not empty"): the records
//	# of a failed stream batch, from the stream failure queue's message
//	# (Lambda's on-failure record), within the stream's 24 h
//	triggers-replay -table EVENTS -queue-url URL stream < failure-message.json
//
//	# delivery: the events of a time window, from the table (any age within retention)
//	triggers-replay -table EVENTS -queue-url URL table -tenant acme -from 2026-11-23T10:00:00Z -to 2026-11-23T11:00:00Z
//	triggers-replay -table EVENTS -queue-url URL table -all-tenants -from ... -to ...
//
//	# the archive of expired events (docs/runbook.md, "Archive failures
//	# not empty"): the TTL deletions the archiver's mapping gave up on,
//	# re-read from the stream (within its 24 h) and written to the archive
//	# bucket; from failure records on standard input, or draining the
//	# archive's failure queue
//	triggers-replay archive -bucket BUCKET < failure-message.json
//	triggers-replay archive -bucket BUCKET -from-queue ARCHIVE_FAILURE_QUEUE_URL -function ARCHIVER_FUNCTION_NAME
//
// Delivery goes through the stream consumer's own code (streamconsumer.Consumer),
// so the messages are exactly what it would have sent; consumers
// deduplicate by event_id, so replaying too much is harmless. The archive
// goes through the archiver's own code (internal/archive): the object keys
// derive from the records' sequence numbers, so replaying a range twice
// writes the same objects. A range that cannot be replayed is reported and
// left on the queue while the others are replayed, as is a failure record
// of another function than the archiver (-function). -from-queue holds
// the messages it received hidden for -hold (120 s), renewed while it
// runs, and makes them visible again when it ends or is stopped (SIGINT,
// SIGTERM, SIGHUP); it reports messages other readers held when it began.
// -dry-run prints instead of sending or writing.
//
// A stream range is read until its last sequence number (or the shard's
// end); GetRecords may answer with empty pages before later records, so
// empty pages do not end it (-max-empty-reads bounds a range whose end
// never comes). After an empty page the replay pauses -empty-wait (1 s)
// before the next GetRecords on the shard, which the stream's event source
// mappings read too (DynamoDB Streams throttles more than two readers of
// a shard at once).
//
// Records of a range that aged out of the stream (24 h) before the replay
// read them (TrimmedDataAccessException) do not fail the range: what the
// stream still has of it is replayed from the shard's trim horizon, and
// each lost part is reported on standard error (LOST FROM THE STREAM: the
// shard, the sequence numbers and, for delivery, the table replay of the
// window its events were written in; for the archive, the times of the
// deletions, lost to the archive) and in the summary.
//
// Exit status: 0, everything replayed; 1, an error (run again) or records
// that can never be delivered or archived (logged with their content);
// 2, a usage error; 3, everything the stream still had was replayed but
// part of a range had aged out of it (1 wins when both apply).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/backoff"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbconfig"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/schema"
)

func main() {
	ctx, stop := signalContext()
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, nil))
}

// signalContext is the command's context: Ctrl-C (SIGINT), SIGTERM and a
// closed terminal (SIGHUP) end it, so the run stops and its clean-up runs
// (archive -from-queue makes the messages it holds visible again, for
// at most its -hold). A second signal ends the process at once.
func signalContext() (context.Context, context.CancelFunc) {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) { // under nohup, a closed terminal stops nothing
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	go func() {
		<-ctx.Done()
		stop() // the signals' default action again
	}()
	return ctx, stop
}

// deps replace what run would build from the flags; tests set some.
type deps struct {
	// pub receives delivery messages. Default: SQS (-queue-url).
	pub streamconsumer.Publisher
	// streams reads the stream. Default: DynamoDB Streams (-endpoint-url).
	streams streampoll.StreamsAPI
	// putter writes archive objects. Default: S3 (-s3-endpoint-url).
	putter archivePutter
	// queue is the archive's failure queue for -from-queue. Default: SQS
	// (-sqs-endpoint-url).
	queue failureQueue
	// sleep makes readRange's pause after an empty GetRecords page
	// (-empty-wait). Default: backoff.Sleep.
	sleep func(ctx context.Context, d time.Duration) error
}

// clients are what the sources talk to.
type clients struct {
	db      *dynamodb.Client
	streams streampoll.StreamsAPI
	pub     streamconsumer.Publisher
	// maxEmpty bounds the empty GetRecords pages read in a row before a
	// range's end (readRange).
	maxEmpty int
	// emptyWait is readRange's pause after an empty GetRecords page,
	// before the next call on the shard (0: none); sleep makes it (nil:
	// backoff.Sleep).
	emptyWait time.Duration
	sleep     func(ctx context.Context, d time.Duration) error
	// skipped takes the records delivery can never send (stream and
	// table); nil in archive mode.
	skipped *undeliverable
	// lost takes the parts of the stream mode's range that had aged out
	// of the stream (readRange); unused in archive mode (replay logs them).
	lost *[]lostPart
}

// undeliverable logs and counts the records the stream consumer can never
// turn into a delivery message (streamconsumer.Decide fails: an item in an
// events partition that is no event, which the consumer's function parked).
// The replay goes on without them: it has no dead-letter queue, and the
// consumer stops a batch at the first such record, so one of them kept
// every later record of its range (or window) from being published, on
// every run.
type undeliverable struct {
	log *slog.Logger
	n   int
}

// filter returns recs without the undeliverable records, each logged with
// its content.
func (u *undeliverable) filter(recs []events.DynamoDBEventRecord) []events.DynamoDBEventRecord {
	out := recs[:0:0]
	for _, r := range recs {
		if _, _, err := streamconsumer.Decide(r); err != nil {
			u.n++
			raw, merr := streamconsumer.MarshalRecord(r)
			if merr != nil {
				raw, _ = json.Marshal(merr.Error())
			}
			u.log.Error("stream record can never be delivered: skipped", "sequence_number", r.Change.SequenceNumber,
				"error", err.Error(), "record", json.RawMessage(raw))
			continue
		}
		out = append(out, r)
	}
	return out
}

const usage = `usage: triggers-replay -table EVENTS_TABLE -queue-url DELIVERY_QUEUE_URL [flags] stream < on-failure-message.json
       triggers-replay -table EVENTS_TABLE -queue-url DELIVERY_QUEUE_URL [flags] table (-tenant T ... | -all-tenants) -from RFC3339 -to RFC3339
       triggers-replay [flags] archive -bucket ARCHIVE_BUCKET [-prefix P] [-function ARCHIVER] [-from-queue ARCHIVE_FAILURE_QUEUE_URL [-hold SECONDS]] [< on-failure-messages.json]
exit status: 0 everything replayed; 1 an error, or records that can never be delivered or archived;
  2 usage; 3 part of a range had aged out of the stream (24 h): the rest was replayed, the lost part
  is reported as LOST FROM THE STREAM (delivery: with the table replay that recovers it)`

// DefaultMaxEmptyReads is -max-empty-reads' default.
const DefaultMaxEmptyReads = 1000

// DefaultEmptyWait is -empty-wait's default: the pause after an empty
// GetRecords page. DynamoDB Streams throttles more than two readers of a
// shard at once, and the stream's event source mappings poll it 4 times
// a second already;
// it is also the local poller's pause (streampoll.PollOptions.Interval).
const DefaultEmptyWait = time.Second

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, d *deps) int {
	if d == nil {
		d = &deps{}
	}
	fs := flag.NewFlagSet("triggers-replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	table := fs.String("table", "", "the events table's name (required by stream and table)")
	queueURL := fs.String("queue-url", "", "the delivery queue's URL (required by stream and table unless -dry-run)")
	endpoint := fs.String("endpoint-url", "", "DynamoDB and DynamoDB Streams endpoint (DynamoDB Local, say)")
	sqsEndpoint := fs.String("sqs-endpoint-url", "", "SQS endpoint")
	dryRun := fs.Bool("dry-run", false, "print the events as JSON lines instead of sending or archiving them")
	maxEmpty := fs.Int("max-empty-reads", DefaultMaxEmptyReads, "empty GetRecords pages read in a row, before a range's last record, after which replay fails (the range never ends)")
	emptyWait := fs.Duration("empty-wait", DefaultEmptyWait, "pause after an empty GetRecords page before the next call on the shard (the shard is shared with the stream's Lambda pollers); 0: none")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	source := fs.Arg(0)
	switch {
	case source == "archive":
	case *table == "" || (*queueURL == "" && !*dryRun) || fs.NArg() == 0:
		fmt.Fprintln(stderr, "triggers-replay: -table and -queue-url (or -dry-run) and a source (stream or table) are required; archive needs neither")
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if *maxEmpty < 1 {
		fmt.Fprintf(stderr, "triggers-replay: -max-empty-reads %d must be at least 1\n", *maxEmpty)
		return 2
	}
	if *emptyWait < 0 {
		fmt.Fprintf(stderr, "triggers-replay: -empty-wait %v must not be negative\n", *emptyWait)
		return 2
	}
	dbOpts := ddb.Options{EndpointURL: *endpoint}
	cfg, err := ddbconfig.LoadConfig(ctx, dbOpts)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-replay: %v\n", err)
		return 1
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	c := clients{db: ddb.ClientFromConfig(cfg, dbOpts), streams: d.streams, pub: d.pub, maxEmpty: *maxEmpty, emptyWait: *emptyWait, sleep: d.sleep, skipped: &undeliverable{log: log}, lost: &[]lostPart{}}
	if c.streams == nil {
		c.streams = dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
			if *endpoint != "" {
				o.BaseEndpoint = aws.String(*endpoint)
			}
		})
	}
	sqsClient := func() *sqs.Client {
		return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			if *sqsEndpoint != "" {
				o.BaseEndpoint = aws.String(*sqsEndpoint)
			}
		})
	}
	if source == "archive" {
		return runArchive(ctx, c, cfg, d, fs.Args()[1:], stdin, stdout, stderr, log, *dryRun, sqsClient)
	}
	// The table replay of a part of the range lost from the stream
	// (reportLost), with this run's flags.
	tableReplay := fmt.Sprintf("triggers-replay -table %s -queue-url %s", *table, *queueURL)
	switch {
	case *dryRun:
		tableReplay = fmt.Sprintf("triggers-replay -table %s -dry-run", *table)
		c.pub = streampoll.WriterSink(stdout)
		*queueURL = "dry-run"
	case c.pub == nil:
		c.pub = streamconsumer.SQSPublisher{QueueURL: *queueURL, Client: sqsClient()}
	}
	consumer, err := streamconsumer.New(streamconsumer.Config{Publisher: c.pub, QueueURL: *queueURL, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "triggers-replay: %v\n", err)
		return 1
	}
	var n int
	switch source {
	case "stream":
		n, err = replayStream(ctx, c, consumer, stdin, fs.Args()[1:])
	case "table":
		n, err = replayTable(ctx, c, consumer, *table, fs.Args()[1:], stderr)
	default:
		fmt.Fprintf(stderr, "triggers-replay: unknown source %q: use stream, table or archive\n%s\n", source, usage)
		return 2
	}
	var usageErr *usageError
	switch {
	case errors.As(err, &usageErr):
		fmt.Fprintf(stderr, "triggers-replay: %v\n", err)
		return 2
	case err != nil:
		reportLost(stderr, *c.lost, tableReplay)
		fmt.Fprintf(stderr, "triggers-replay: %v (%d events published before the error; run again: consumers deduplicate by event_id)\n", err, n)
		return 1
	}
	reportLost(stderr, *c.lost, tableReplay)
	fmt.Fprintf(stderr, "triggers-replay: %d events published\n", n)
	code := 0
	if k := len(*c.lost); k > 0 {
		what := "1 part of the range was lost"
		if k > 1 {
			what = fmt.Sprintf("%d parts of the range were lost", k)
		}
		fmt.Fprintf(stderr, "triggers-replay: %s: it had aged out of the stream (24 h) before the replay; everything the stream still had was published; replay the lost part from the table (the command is above; exit status %d)\n", what, exitLost)
		code = exitLost
	}
	if k := c.skipped.n; k > 0 {
		fmt.Fprintf(stderr, "triggers-replay: %d records can never be delivered (no event: logged above with their content) and were skipped\n", k)
		code = 1
	}
	return code
}

// exitLost is the exit status of a run that replayed everything the
// stream still had of its ranges, but part of a range (or all of one)
// had aged out of the stream's 24 h before the replay: each lost part is
// reported on standard error with how to recover it. An error or a record
// that can never be delivered or archived exits 1 instead (the lost parts
// are reported all the same).
const exitLost = 3

// reportLost prints each part of the range lost from the stream, with
// the table replay (tableReplay: the command and its global flags) of
// the window its events were written in.
func reportLost(w io.Writer, lost []lostPart, tableReplay string) {
	for _, g := range lost {
		fmt.Fprintf(w, "triggers-replay: LOST FROM THE STREAM: %s had aged out of the stream (24 h) and were not replayed. ", g)
		if from, to, ok := g.window(); ok {
			fmt.Fprintf(w, "Their events are still in the table (those TTL deleted since are in the archive): replay the window they were written in, a minute wider either side (replaying too much is harmless), with: %s table -all-tenants -from %s -to %s\n", tableReplay, from, to)
			continue
		}
		fmt.Fprintf(w, "Their events are still in the table (those TTL deleted since are in the archive): replay the window of the failure message's approximateArrivalOfFirstRecord and approximateArrivalOfLastRecord, a minute wider either side, with: %s table -all-tenants -from FIRST -to LAST\n", tableReplay)
	}
}

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// failureMessage is a message of a stream failure queue: Lambda's
// on-failure record for a stream event source (DDBStreamBatchInfo
// locates the batch), or a record a function parked itself.
type failureMessage struct {
	Info *streampoll.BatchInfo `json:"DDBStreamBatchInfo"`
	// Context names the function whose event source mapping gave the
	// batch up (Lambda's on-failure records only).
	Context struct {
		FunctionArn string `json:"functionArn"`
	} `json:"requestContext"`
	// Reason and Record are set instead on the records a function parked
	// itself (malformed: never replayable).
	Reason string          `json:"reason"`
	Record json.RawMessage `json:"record"`
}

// replayStream re-reads the failed batch's sequence number range from its
// shard and hands the records to the consumer.
func replayStream(ctx context.Context, c clients, consumer *streamconsumer.Consumer, stdin io.Reader, args []string) (int, error) {
	if len(args) > 0 {
		return 0, &usageError{"stream takes no arguments: pipe the failure queue's message on standard input"}
	}
	var m failureMessage
	if err := json.NewDecoder(stdin).Decode(&m); err != nil {
		return 0, &usageError{fmt.Sprintf("standard input is not a failure message: %v", err)}
	}
	if m.Info == nil {
		if m.Reason != "" {
			return 0, &usageError{"this message is a malformed record the consumer parked (" + m.Reason + "): it can never be delivered; fix or drop it"}
		}
		return 0, &usageError{"the message has no DDBStreamBatchInfo: pass Lambda's on-failure record from the stream failure queue"}
	}
	published := 0
	lost, err := readRange(ctx, c, *m.Info, func(batch []events.DynamoDBEventRecord) error {
		n, err := handle(ctx, consumer, c.skipped.filter(batch))
		published += n
		return err
	})
	*c.lost = append(*c.lost, lost...)
	return published, err
}

// readRange reads the records of in's inclusive sequence number range
// from its shard, in order, and hands each GetRecords page's records
// (converted to the form Lambda delivers) to fn. It stops after the
// range's last record or at the shard's end (no next iterator). An empty
// page does not end it: GetRecords may answer with no records while later
// ones exist ("it might take multiple calls to get to a portion of the
// shard that contains stream records"); c.maxEmpty empty pages in a row
// fail it instead, as a range that never ends. After an empty page it
// pauses c.emptyWait (with c.sleep) before the next call on the shard.
//
// Records of the range that aged out of the stream (24 h) before they
// were read do not fail it: on a TrimmedDataAccessException (from
// GetShardIterator at the range's start, or from GetRecords when records
// aged out while it read) it goes on from the shard's trim horizon,
// reads what the stream still has of the range, and returns each part
// it lost (the records before the first one it could read, or after the
// last one it had read), also with an error.
func readRange(ctx context.Context, c clients, in streampoll.BatchInfo, fn func([]events.DynamoDBEventRecord) error) ([]lostPart, error) {
	streams := c.streams
	var (
		lost     []lostPart
		gap      *lostPart // a trim met, the first record after it not read yet
		last     string    // the range's last record read
		lastTime time.Time
	)
	// trimmed opens a gap after the last record read (or at the range's
	// start) unless one is open.
	trimmed := func() {
		if gap != nil {
			return
		}
		gap = &lostPart{shard: in.ShardID, end: in.EndSequenceNumber, from: last, fromTime: lastTime}
		if last == "" {
			gap.from, gap.atStart, gap.fromTime = in.StartSequenceNumber, true, arrival(in.ApproximateArrivalOfFirstRecord)
		}
	}
	// finish closes an open gap: the rest of the range is lost.
	finish := func() []lostPart {
		if gap != nil {
			gap.untilTime = arrival(in.ApproximateArrivalOfLastRecord)
			lost, gap = append(lost, *gap), nil
		}
		return lost
	}
	horizon := func() (*string, error) {
		it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(in.StreamArn), ShardId: aws.String(in.ShardID), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			return nil, fmt.Errorf("position at the trim horizon of shard %s (records of the range had aged out of the stream): %w", in.ShardID, err)
		}
		return it.ShardIterator, nil
	}
	var iter *string
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(in.StreamArn), ShardId: aws.String(in.ShardID),
		ShardIteratorType: streamtypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(in.StartSequenceNumber),
	})
	switch {
	case isTrimmed(err):
		trimmed()
		if iter, err = horizon(); err != nil {
			return finish(), err
		}
	case err != nil:
		return nil, fmt.Errorf("position at %s on shard %s (older than the stream's 24 h?): %w", in.StartSequenceNumber, in.ShardID, err)
	default:
		iter = it.ShardIterator
	}
	for empty, trims := 0, 0; iter != nil; {
		out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		if isTrimmed(err) {
			// The iterator's record aged out since it was obtained: go on
			// from the oldest record still there. The trim horizon moves
			// on meanwhile, so this may happen again, but not forever.
			if trims++; trims > maxTrims {
				return finish(), fmt.Errorf("read shard %s: %d TrimmedDataAccessExceptions in a row, from its trim horizon too: %w", in.ShardID, trims, err)
			}
			trimmed()
			if iter, err = horizon(); err != nil {
				return finish(), err
			}
			continue
		}
		if err != nil {
			return finish(), fmt.Errorf("read shard %s: %w", in.ShardID, err)
		}
		trims = 0
		iter = out.NextShardIterator
		if len(out.Records) == 0 {
			if empty++; empty >= c.maxEmpty && iter != nil {
				return finish(), fmt.Errorf("read %d empty pages in a row on shard %s without reaching sequence number %s: the range does not end on this stream (run again to keep reading, or raise -max-empty-reads)", empty, in.ShardID, in.EndSequenceNumber)
			}
			if iter != nil && c.emptyWait > 0 {
				// Pace the calls on the shard while it has nothing to
				// give: the stream's mappings poll it too.
				sleep := c.sleep
				if sleep == nil {
					sleep = backoff.Sleep
				}
				if err := sleep(ctx, c.emptyWait); err != nil {
					return finish(), fmt.Errorf("read shard %s: %w", in.ShardID, err)
				}
			}
			continue
		}
		empty = 0
		var batch []events.DynamoDBEventRecord
		done := false
		for _, r := range out.Records {
			seq := aws.ToString(r.Dynamodb.SequenceNumber)
			if seqAfter(seq, in.EndSequenceNumber) {
				done = true
				break
			}
			if seqAfter(in.StartSequenceNumber, seq) || (last != "" && !seqAfter(seq, last)) {
				continue // before the range, or read before a trim
			}
			rec, err := streampoll.LambdaRecord(r, in.StreamArn, "")
			if err != nil {
				return finish(), err
			}
			if gap != nil {
				gap.until, gap.untilTime = seq, rec.Change.ApproximateCreationDateTime.Time
				lost, gap = append(lost, *gap), nil
			}
			batch = append(batch, rec)
			last, lastTime = seq, rec.Change.ApproximateCreationDateTime.Time
		}
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return finish(), err
			}
		}
		if done || last == in.EndSequenceNumber {
			return finish(), nil
		}
	}
	return finish(), nil
}

// maxTrims bounds the TrimmedDataAccessExceptions readRange meets in a
// row (each repositions at the trim horizon) before it fails.
const maxTrims = 3

func isTrimmed(err error) bool {
	var t *streamtypes.TrimmedDataAccessException
	return errors.As(err, &t)
}

// arrival parses a BatchInfo's approximate arrival time; zero if absent.
func arrival(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// lostPart is a part of a range that the stream no longer had when
// readRange read it: its records aged out of the stream's 24 h
// (TrimmedDataAccessException).
type lostPart struct {
	shard string
	// from is the range's start (atStart: lost from it, inclusive) or the
	// last record read before the trim (lost: what came after it).
	from    string
	atStart bool
	// until is the first record of the range read after the gap (lost:
	// what came before it); "" when the rest of the range, through end,
	// is lost.
	until, end string
	// fromTime and untilTime are the approximate times of the stream
	// records that bound the gap (the range's approximate arrivals at its
	// ends); zero when unknown.
	fromTime, untilTime time.Time
}

func (g lostPart) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shard %s, sequence numbers ", g.shard)
	if g.atStart {
		fmt.Fprintf(&b, "from %s (the range's start)", g.from)
	} else {
		fmt.Fprintf(&b, "after %s", g.from)
	}
	if g.until != "" {
		fmt.Fprintf(&b, " to before %s", g.until)
	} else {
		fmt.Fprintf(&b, " through the range's end %s", g.end)
	}
	return b.String()
}

// window is the time window the lost records were written in, a minute
// wider either side (stream times are approximate, and an event's time is
// set before its write), in RFC 3339; ok is false when a bound is unknown.
func (g lostPart) window() (from, to string, ok bool) {
	if g.fromTime.IsZero() || g.untilTime.IsZero() {
		return "", "", false
	}
	f := g.fromTime.UTC().Add(-time.Minute).Truncate(time.Second)
	t := g.untilTime.UTC().Add(time.Minute).Truncate(time.Second).Add(time.Second)
	return f.Format(time.RFC3339), t.Format(time.RFC3339), true
}

// seqAfter compares DynamoDB Streams sequence numbers (decimal strings).
func seqAfter(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// handle sends the records through the consumer and counts the events
// published; any record failure is an error.
func handle(ctx context.Context, consumer *streamconsumer.Consumer, recs []events.DynamoDBEventRecord) (int, error) {
	n := 0
	for _, r := range recs {
		if d, _, err := streamconsumer.Decide(r); err == nil && d == streamconsumer.Deliver {
			n++
		}
	}
	resp, err := consumer.Handle(ctx, events.DynamoDBEvent{Records: recs})
	if err != nil {
		return 0, err
	}
	if len(resp.BatchItemFailures) > 0 {
		// The consumer publishes in order and fails from the first record
		// it could not publish: the events before it were published
		// (before, this said 0, and a run stopped mid-batch reported
		// fewer events than it had published).
		first := resp.BatchItemFailures[0].ItemIdentifier
		n = 0
		for _, r := range recs {
			if r.Change.SequenceNumber == first {
				break
			}
			if d, _, err := streamconsumer.Decide(r); err == nil && d == streamconsumer.Deliver {
				n++
			}
		}
		return n, fmt.Errorf("%d records could not be published, from sequence number %s (see the log line above)", len(resp.BatchItemFailures), first)
	}
	return n, nil
}

// replayTable publishes every event of the window [from, to) of the named
// tenants (or of every tenant, with a Scan) as INSERT records.
func replayTable(ctx context.Context, c clients, consumer *streamconsumer.Consumer, table string, args []string, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tenants multi
	fs.Var(&tenants, "tenant", "a tenant whose events to publish (repeat for several)")
	all := fs.Bool("all-tenants", false, "every tenant's events (a Scan of the whole table)")
	fromS := fs.String("from", "", "start of the window, RFC 3339 (inclusive)")
	toS := fs.String("to", "", "end of the window, RFC 3339 (exclusive)")
	pageSize := fs.Int("page-size", 0, "items DynamoDB reads per Query or Scan page (Limit), to spread the read capacity; 0: pages of up to 1 MB")
	if err := fs.Parse(args); err != nil {
		return 0, &usageError{err.Error()}
	}
	var limit *int32
	switch {
	case *pageSize < 0 || *pageSize > 1<<20:
		return 0, &usageError{fmt.Sprintf("-page-size %d must be 1 to 1048576, or 0 for DynamoDB's 1 MB pages", *pageSize)}
	case *pageSize > 0:
		limit = aws.Int32(int32(*pageSize))
	}
	from, err1 := time.Parse(time.RFC3339Nano, *fromS)
	to, err2 := time.Parse(time.RFC3339Nano, *toS)
	switch {
	case err1 != nil || err2 != nil:
		return 0, &usageError{"-from and -to must be RFC 3339 times, such as 2026-11-23T10:00:00Z"}
	case !to.After(from):
		return 0, &usageError{fmt.Sprintf("-to %s is not after -from %s", *toS, *fromS)}
	case *all == (len(tenants) > 0):
		return 0, &usageError{"name the tenants with -tenant, or pass -all-tenants (not both)"}
	}
	for _, t := range tenants {
		if !event.ValidTenantID(t) {
			return 0, &usageError{fmt.Sprintf("-tenant %q is not a tenant id", t)}
		}
	}
	// The sort key starts with the event's timestamp, so a window is a
	// key range: [from, to) as "<ts>#" prefixes. Event times have
	// microseconds, the flags may have nanoseconds: each bound is rounded
	// up to the next microsecond, so that an event time t is in the range
	// exactly when from <= t < to (truncated, an event a fraction of a
	// microsecond before -from was in, one as far before -to out).
	lo, hi := event.FormatTime(ceilMicro(from))+contract.KeySeparator, event.FormatTime(ceilMicro(to))+contract.KeySeparator
	published := 0
	// Every page is read until DynamoDB returns no LastEvaluatedKey (the
	// paginators' HasMorePages): a page the filter left empty, or the
	// window's first pages of a tenant, may be followed by events.
	page := func(items []map[string]types.AttributeValue) error {
		if len(items) == 0 {
			return nil
		}
		var recs []events.DynamoDBEventRecord
		for _, it := range items {
			rec, err := insertRecord(it)
			if err != nil {
				return err
			}
			recs = append(recs, rec)
		}
		n, err := handle(ctx, consumer, c.skipped.filter(recs))
		published += n
		return err
	}
	names := map[string]string{"#pk": schema.AttrUserID, "#sk": schema.AttrTimestampEventID}
	if *all {
		p := dynamodb.NewScanPaginator(c.db, &dynamodb.ScanInput{
			TableName:                 aws.String(table),
			FilterExpression:          aws.String("#sk BETWEEN :lo AND :hi AND NOT contains(#pk, :sep)"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: map[string]types.AttributeValue{":lo": s(lo), ":hi": s(hi), ":sep": s(contract.KeySeparator)},
			ConsistentRead:            aws.Bool(true),
			Limit:                     limit,
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return published, fmt.Errorf("scan %s: %w", table, err)
			}
			if err := page(out.Items); err != nil {
				return published, err
			}
		}
		return published, nil
	}
	// Every partition a tenant's events may be in: its own and, for a
	// sharded tenant, its shards' (an empty one costs one small read).
	var partitions []string
	for _, t := range tenants {
		for k := 0; k < shard.MaxShards; k++ {
			partitions = append(partitions, shard.Partition(t, k))
		}
	}
	for _, t := range partitions {
		p := dynamodb.NewQueryPaginator(c.db, &dynamodb.QueryInput{
			TableName:                 aws.String(table),
			KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(t), ":lo": s(lo), ":hi": s(hi)},
			ConsistentRead:            aws.Bool(true),
			Limit:                     limit,
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return published, fmt.Errorf("query %s for %s: %w", table, t, err)
			}
			if err := page(out.Items); err != nil {
				return published, err
			}
		}
	}
	return published, nil
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// ceilMicro rounds t up to a whole microsecond, the precision of event
// times.
func ceilMicro(t time.Time) time.Time {
	if c := t.Truncate(time.Microsecond); !c.Equal(t) {
		return c.Add(time.Microsecond)
	}
	return t
}

// insertRecord is the stream record an item's insertion made: what the
// consumer would have received.
func insertRecord(item map[string]types.AttributeValue) (events.DynamoDBEventRecord, error) {
	img, err := streamImage(item)
	if err != nil {
		return events.DynamoDBEventRecord{}, err
	}
	id := ""
	if v, ok := item[schema.AttrEventID].(*types.AttributeValueMemberS); ok {
		id = v.Value
	}
	rec := events.DynamoDBEventRecord{EventName: string(events.DynamoDBOperationTypeInsert), EventID: "replay-" + id}
	rec.Change.NewImage = img
	rec.Change.SequenceNumber = "replay-" + id
	rec.Change.StreamViewType = "NEW_IMAGE"
	return rec, nil
}

// streamImage converts an item to the aws-lambda-go image form through
// the Streams API's attribute value type, with the converter the local
// stream reader uses.
func streamImage(item map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	out := make(map[string]streamtypes.AttributeValue, len(item))
	for k, v := range item {
		sv, err := toStreamValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = sv
	}
	return streampoll.LambdaImage(out)
}

func toStreamValue(av types.AttributeValue) (streamtypes.AttributeValue, error) {
	switch x := av.(type) {
	case *types.AttributeValueMemberS:
		return &streamtypes.AttributeValueMemberS{Value: x.Value}, nil
	case *types.AttributeValueMemberN:
		return &streamtypes.AttributeValueMemberN{Value: x.Value}, nil
	case *types.AttributeValueMemberBOOL:
		return &streamtypes.AttributeValueMemberBOOL{Value: x.Value}, nil
	case *types.AttributeValueMemberNULL:
		return &streamtypes.AttributeValueMemberNULL{Value: x.Value}, nil
	case *types.AttributeValueMemberB:
		return &streamtypes.AttributeValueMemberB{Value: x.Value}, nil
	case *types.AttributeValueMemberSS:
		return &streamtypes.AttributeValueMemberSS{Value: x.Value}, nil
	case *types.AttributeValueMemberNS:
		return &streamtypes.AttributeValueMemberNS{Value: x.Value}, nil
	case *types.AttributeValueMemberBS:
		return &streamtypes.AttributeValueMemberBS{Value: x.Value}, nil
	case *types.AttributeValueMemberL:
		l := make([]streamtypes.AttributeValue, len(x.Value))
		for i, e := range x.Value {
			v, err := toStreamValue(e)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return &streamtypes.AttributeValueMemberL{Value: l}, nil
	case *types.AttributeValueMemberM:
		m := make(map[string]streamtypes.AttributeValue, len(x.Value))
		for k, e := range x.Value {
			v, err := toStreamValue(e)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return &streamtypes.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("unsupported attribute value %T", av)
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }
