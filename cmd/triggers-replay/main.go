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
//	triggers-replay archive -bucket BUCKET -from-queue ARCHIVE_FAILURE_QUEUE_URL
//
// Delivery goes through the stream consumer's own code (streamconsumer.Consumer),
// so the messages are exactly what it would have sent; consumers
// deduplicate by event_id, so replaying too much is harmless. The archive
// goes through the archiver's own code (internal/archive): the object keys
// derive from the records' sequence numbers, so replaying a range twice
// writes the same objects. A range that cannot be replayed is reported and
// left on the queue while the others are replayed. -dry-run prints
// instead of sending or writing.
//
// A stream range is read until its last sequence number (or the shard's
// end); GetRecords may answer with empty pages before later records, so
// empty pages do not end it (-max-empty-reads bounds a range whose end
// never comes).
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
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbconfig"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/schema"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, nil))
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
}

// clients are what the sources talk to.
type clients struct {
	db      *dynamodb.Client
	streams streampoll.StreamsAPI
	pub     streamconsumer.Publisher
	// maxEmpty bounds the empty GetRecords pages read in a row before a
	// range's end (readRange).
	maxEmpty int
	// skipped takes the records delivery can never send (stream and
	// table); nil in archive mode.
	skipped *undeliverable
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
       triggers-replay [flags] archive -bucket ARCHIVE_BUCKET [-prefix P] [-from-queue ARCHIVE_FAILURE_QUEUE_URL] [< on-failure-messages.json]`

// DefaultMaxEmptyReads is -max-empty-reads' default.
const DefaultMaxEmptyReads = 1000

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
	dbOpts := ddb.Options{EndpointURL: *endpoint}
	cfg, err := ddbconfig.LoadConfig(ctx, dbOpts)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-replay: %v\n", err)
		return 1
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	c := clients{db: ddb.ClientFromConfig(cfg, dbOpts), streams: d.streams, pub: d.pub, maxEmpty: *maxEmpty, skipped: &undeliverable{log: log}}
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
	switch {
	case *dryRun:
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
		fmt.Fprintf(stderr, "triggers-replay: %v (%d events published before the error; run again: consumers deduplicate by event_id)\n", err, n)
		return 1
	}
	fmt.Fprintf(stderr, "triggers-replay: %d events published\n", n)
	if k := c.skipped.n; k > 0 {
		fmt.Fprintf(stderr, "triggers-replay: %d records can never be delivered (no event: logged above with their content) and were skipped\n", k)
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// failureMessage is a message of a stream failure queue: Lambda's
// on-failure record for a stream event source (DDBStreamBatchInfo
// locates the batch), or a record a function parked itself.
type failureMessage struct {
	Info *streampoll.BatchInfo `json:"DDBStreamBatchInfo"`
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
	err := readRange(ctx, c.streams, *m.Info, c.maxEmpty, func(batch []events.DynamoDBEventRecord) error {
		n, err := handle(ctx, consumer, c.skipped.filter(batch))
		published += n
		return err
	})
	return published, err
}

// readRange reads the records of in's inclusive sequence number range
// from its shard, in order, and hands each GetRecords page's records
// (converted to the form Lambda delivers) to fn. It stops after the
// range's last record or at the shard's end (no next iterator). An empty
// page does not end it: GetRecords may answer with no records while later
// ones exist ("it might take multiple calls to get to a portion of the
// shard that contains stream records"); maxEmpty empty pages in a row
// fail it instead, as a range that never ends.
func readRange(ctx context.Context, streams streampoll.StreamsAPI, in streampoll.BatchInfo, maxEmpty int, fn func([]events.DynamoDBEventRecord) error) error {
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(in.StreamArn), ShardId: aws.String(in.ShardID),
		ShardIteratorType: streamtypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(in.StartSequenceNumber),
	})
	if err != nil {
		return fmt.Errorf("position at %s on shard %s (older than the stream's 24 h?): %w", in.StartSequenceNumber, in.ShardID, err)
	}
	iter := it.ShardIterator
	for empty := 0; iter != nil; {
		out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			return fmt.Errorf("read shard %s: %w", in.ShardID, err)
		}
		iter = out.NextShardIterator
		if len(out.Records) == 0 {
			if empty++; empty >= maxEmpty && iter != nil {
				return fmt.Errorf("read %d empty pages in a row on shard %s without reaching sequence number %s: the range does not end on this stream (run again to keep reading, or raise -max-empty-reads)", empty, in.ShardID, in.EndSequenceNumber)
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
			rec, err := streampoll.LambdaRecord(r, in.StreamArn, "")
			if err != nil {
				return err
			}
			batch = append(batch, rec)
		}
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
		}
		if done || (len(batch) > 0 && batch[len(batch)-1].Change.SequenceNumber == in.EndSequenceNumber) {
			return nil
		}
	}
	return nil
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
