// Package streampoll runs the stream consumer outside Lambda, for make dev
// and tests: StreamReader reads a table's stream with the DynamoDB Streams
// API (records converted to the form Lambda delivers) and polls it like an
// event source mapping; SinkFunc and WriterSink stand in for the SQS
// delivery queue. Local-only: no Lambda binary links it (docs/layout.md).
package streampoll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/triggers-dev/triggers/internal/backoff"
)

// StreamsAPI is the part of the DynamoDB Streams client StreamReader
// uses; *dynamodbstreams.Client implements it.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// TableDescriber is the part of the DynamoDB client LatestStreamARN uses.
type TableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// LatestStreamARN returns the ARN of table's current stream
// (DescribeTable's LatestStreamArn), or an error if it has none.
func LatestStreamARN(ctx context.Context, db TableDescriber, table string) (string, error) {
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", table, err)
	}
	arn := aws.ToString(out.Table.LatestStreamArn)
	if arn == "" {
		return "", fmt.Errorf("table %s has no stream: enable one with view type NEW_IMAGE", table)
	}
	return arn, nil
}

// StreamReaderOptions configure a StreamReader.
type StreamReaderOptions struct {
	// Latest starts the shards that exist at the first read at LATEST
	// (only records written from then on); shards that appear later are
	// read from their start. Default: TRIM_HORIZON, every record still in
	// the stream.
	Latest bool
	// Limit is the most records one GetRecords call returns (1-1000).
	// Default: 100, the default batch size of a Lambda event source
	// mapping.
	Limit int32
	// Region fills each record's awsRegion when the API leaves it empty.
	// Default: empty.
	Region string
	// Logger receives one LOST FROM THE STREAM line per range of records
	// that aged out of the stream before the reader could read them
	// (LostRange). Default: Poll's Logger under Poll, else slog.Default().
	Logger *slog.Logger
}

type shardState struct {
	parent   string
	latest   bool // start at LATEST (shards that existed when reading began)
	iterator *string
	// resumeType and resumeSeq renew an expired iterator: after the last
	// record read, or where Rewind or SkipPast pointed. Empty: the
	// reader's start position.
	resumeType streamtypes.ShardIteratorType
	resumeSeq  string
	closed     bool // GetRecords returned no next iterator: fully read
	// renewedAfterTrim is set when a TrimmedDataAccessException made the
	// reader renew the iterator from resumeSeq; a second one in a row
	// starts the shard over from its trim horizon.
	renewedAfterTrim bool
	// gap is set when the shard was started over from its trim horizon
	// while it had a position (resumeType, resumeSeq): the records from
	// there up to the first one read at the horizon aged out of the
	// stream unread, and those before it were handled already.
	gap *trimGap
}

// trimGap is where a shard's reading stood when a trim made the reader
// start it over from its trim horizon.
type trimGap struct {
	seq string
	// at: seq itself was not handled yet (AT_SEQUENCE_NUMBER: Rewind);
	// else only the records after it (AFTER_SEQUENCE_NUMBER).
	at bool
	// reached is set once a record at or before the position was read
	// from the horizon: the stream still had it, so nothing was lost.
	reached bool
}

// LostRange is a part of a shard whose records aged out of the stream
// (DynamoDB keeps them 24 hours; TrimmedDataAccessException) before the
// reader read them: they were never handed to the handler.
type LostRange struct {
	// ShardID is the shard the records were on.
	ShardID string
	// From is the first sequence number that may be lost (FromInclusive)
	// or the last one read before the gap (the lost ones come after it).
	From          string
	FromInclusive bool
	// Before is the first record read after the gap (the lost ones come
	// before it); "" when the shard ended without another record.
	Before string
}

// String describes the range like cmd/triggers-replay's LOST FROM THE
// STREAM lines: "shard S, sequence numbers after A to before B".
func (l LostRange) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shard %s, sequence numbers ", l.ShardID)
	if l.FromInclusive {
		fmt.Fprintf(&b, "from %s", l.From)
	} else {
		fmt.Fprintf(&b, "after %s", l.From)
	}
	if l.Before != "" {
		fmt.Fprintf(&b, " to before %s", l.Before)
	} else {
		b.WriteString(" to the shard's end")
	}
	return b.String()
}

// StreamReader reads a DynamoDB stream with the DynamoDB Streams API
// (DescribeStream, GetShardIterator, GetRecords) and yields each shard's
// records as an events.DynamoDBEvent, exactly the shape Lambda hands the
// stream consumer. A child shard is read only after its parent was read
// to the end, so records of one item stay in order. It works against
// DynamoDB Local and AWS alike; it is not safe for concurrent use.
type StreamReader struct {
	client StreamsAPI
	arn    string
	opts   StreamReaderOptions
	shards map[string]*shardState
	// listed is set once the shards were listed the first time.
	listed bool
	log    *slog.Logger
	// lost holds every LostRange met so far; unreported the ones Poll has
	// not handed to OnLost yet.
	lost, unreported []LostRange
}

// NewStreamReader returns a reader of the stream streamARN.
func NewStreamReader(client StreamsAPI, streamARN string, opts StreamReaderOptions) *StreamReader {
	if opts.Limit <= 0 || opts.Limit > 1000 {
		opts.Limit = 100
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &StreamReader{client: client, arn: streamARN, opts: opts, shards: map[string]*shardState{}, log: log}
}

// Lost returns every range of records that aged out of the stream before
// the reader read them, in the order it found them (each also logged as
// LOST FROM THE STREAM). A record that is read at all is never lost.
func (r *StreamReader) Lost() []LostRange {
	return slices.Clone(r.lost)
}

// lose records and logs the range l.
func (r *StreamReader) lose(ctx context.Context, l LostRange) {
	r.lost = append(r.lost, l)
	r.unreported = append(r.unreported, l)
	r.log.LogAttrs(ctx, slog.LevelError, "LOST FROM THE STREAM: "+l.String()+": the records had aged out of the stream (24 h) before the poller read them; they were not handled",
		slog.String("shard_id", l.ShardID), slog.String("from_sequence_number", l.From), slog.Bool("from_inclusive", l.FromInclusive),
		slog.String("before_sequence_number", l.Before), slog.String("stream_arn", r.arn))
}

// ShardBatch is the records one GetRecords call returned for one shard.
type ShardBatch struct {
	// ShardID is the shard the records come from.
	ShardID string
	// Event holds the records in stream order, as Lambda delivers them.
	Event events.DynamoDBEvent
}

// Next makes one polling round: it refreshes the shard list and calls
// GetRecords once on every shard that may be read, returning one batch
// per shard that had records (none when nothing is new).
func (r *StreamReader) Next(ctx context.Context) ([]ShardBatch, error) {
	if err := r.refreshShards(ctx); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(r.shards))
	for id := range r.shards {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var batches []ShardBatch
	for _, id := range ids {
		s := r.shards[id]
		if s.closed {
			continue
		}
		if p, ok := r.shards[s.parent]; ok && !p.closed {
			continue // read the parent to its end first
		}
		recs, err := r.read(ctx, id, s)
		if err != nil {
			return batches, err
		}
		if len(recs) > 0 {
			batches = append(batches, ShardBatch{ShardID: id, Event: events.DynamoDBEvent{Records: recs}})
		}
	}
	return batches, nil
}

func (r *StreamReader) refreshShards(ctx context.Context) error {
	var start *string
	for {
		out, err := r.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(r.arn), ExclusiveStartShardId: start})
		if err != nil {
			return fmt.Errorf("describe stream %s: %w", r.arn, err)
		}
		d := out.StreamDescription
		if d == nil {
			return fmt.Errorf("describe stream %s: no description", r.arn)
		}
		for _, sh := range d.Shards {
			id := aws.ToString(sh.ShardId)
			if _, ok := r.shards[id]; !ok {
				// Only shards that exist when reading begins start at
				// LATEST; later ones (children) are read from their start,
				// or their first records would be skipped.
				r.shards[id] = &shardState{parent: aws.ToString(sh.ParentShardId), latest: r.opts.Latest && !r.listed}
			}
		}
		if d.LastEvaluatedShardId == nil {
			r.listed = true
			return nil
		}
		start = d.LastEvaluatedShardId
	}
}

// position sets the shard's iterator: typ at seq, or the reader's start
// position when typ is empty.
func (r *StreamReader) position(ctx context.Context, id string, s *shardState, typ streamtypes.ShardIteratorType, seq string) error {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(r.arn), ShardId: aws.String(id), ShardIteratorType: typ}
	switch {
	case typ != "":
		in.SequenceNumber = aws.String(seq)
	case s.latest:
		in.ShardIteratorType = streamtypes.ShardIteratorTypeLatest
	default:
		in.ShardIteratorType = streamtypes.ShardIteratorTypeTrimHorizon
	}
	out, err := r.client.GetShardIterator(ctx, in)
	if err != nil {
		return fmt.Errorf("get %s iterator of shard %s: %w", in.ShardIteratorType, id, err)
	}
	s.iterator, s.closed = out.ShardIterator, out.ShardIterator == nil
	return nil
}

// restart starts shard s over from its trim horizon on the next read; a
// position it had becomes its gap (unless one is open already).
func restart(s *shardState) {
	if s.resumeType != "" && s.gap == nil {
		s.gap = &trimGap{seq: s.resumeSeq, at: s.resumeType == streamtypes.ShardIteratorTypeAtSequenceNumber}
	}
	s.iterator = nil
	s.resumeType, s.resumeSeq, s.latest, s.renewedAfterTrim = "", "", false, false
}

func isTrimmed(err error) bool {
	var trimmed *streamtypes.TrimmedDataAccessException
	return errors.As(err, &trimmed)
}

func (r *StreamReader) read(ctx context.Context, id string, s *shardState) ([]events.DynamoDBEventRecord, error) {
	if s.iterator == nil {
		err := r.position(ctx, id, s, s.resumeType, s.resumeSeq)
		if isTrimmed(err) && s.resumeType != "" {
			// The position itself aged out of the stream.
			restart(s)
			err = r.position(ctx, id, s, "", "")
		}
		if err != nil {
			return nil, err
		}
		if s.closed {
			r.closeGap(ctx, id, s)
			return nil, nil
		}
	}
	out, err := r.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: s.iterator, Limit: aws.Int32(r.opts.Limit)})
	var expired *streamtypes.ExpiredIteratorException
	if errors.As(err, &expired) {
		s.iterator = nil // renewed from resumeType/resumeSeq on the next round
		return nil, nil
	}
	if isTrimmed(err) {
		// The iterator points before the shard's oldest record: on AWS
		// the records aged out (24 hours); DynamoDB Local also says so
		// for the iterator of a shard that was empty when other tables
		// were created. Renew at the position it had; if that fails too,
		// or nothing was read yet, start over from the oldest record
		// still there: the records before the position are not handed
		// again, and those from it to the oldest one still there are
		// reported lost (LostRange).
		s.iterator = nil
		if s.resumeType == "" || s.renewedAfterTrim {
			restart(s)
		} else {
			s.renewedAfterTrim = true
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get records of shard %s: %w", id, err)
	}
	s.renewedAfterTrim = false
	s.iterator = out.NextShardIterator
	s.closed = out.NextShardIterator == nil
	recs := make([]events.DynamoDBEventRecord, 0, len(out.Records))
	for _, rec := range out.Records {
		lr, err := r.lambdaRecord(rec)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", id, err)
		}
		seq := lr.Change.SequenceNumber
		s.resumeType, s.resumeSeq = streamtypes.ShardIteratorTypeAfterSequenceNumber, seq
		if g := s.gap; g != nil {
			if sequenceLess(seq, g.seq) || (seq == g.seq && !g.at) {
				// Handled before the trim; and the stream still holds the
				// position, so nothing after it aged out.
				g.reached = true
				continue
			}
			// The first record read past the position: unless it is the
			// position itself, or the stream still had a record before
			// it, what came between aged out unread.
			s.gap = nil
			if !g.reached && !(g.at && seq == g.seq) {
				r.lose(ctx, LostRange{ShardID: id, From: g.seq, FromInclusive: g.at, Before: seq})
			}
		}
		recs = append(recs, lr)
	}
	if s.closed {
		r.closeGap(ctx, id, s)
	}
	return recs, nil
}

// closeGap reports the rest of the shard lost when it ended with its gap
// still open: no record past the position was left, and none at or
// before it either (else the position was still there: nothing lost).
func (r *StreamReader) closeGap(ctx context.Context, id string, s *shardState) {
	if g := s.gap; g != nil {
		s.gap = nil
		if !g.reached {
			r.lose(ctx, LostRange{ShardID: id, From: g.seq, FromInclusive: g.at})
		}
	}
}

// sequenceLess compares stream sequence numbers (decimal strings) as
// numbers.
func sequenceLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Rewind makes the next read of shardID start at sequence number seq
// (AT_SEQUENCE_NUMBER): how a poller retries from the first failed record,
// as Lambda does with ReportBatchItemFailures.
func (r *StreamReader) Rewind(ctx context.Context, shardID, seq string) error {
	return r.reposition(ctx, shardID, streamtypes.ShardIteratorTypeAtSequenceNumber, seq)
}

// SkipPast makes the next read of shardID start after sequence number seq
// (AFTER_SEQUENCE_NUMBER): how a poller gives up on a record.
func (r *StreamReader) SkipPast(ctx context.Context, shardID, seq string) error {
	return r.reposition(ctx, shardID, streamtypes.ShardIteratorTypeAfterSequenceNumber, seq)
}

func (r *StreamReader) reposition(ctx context.Context, shardID string, typ streamtypes.ShardIteratorType, seq string) error {
	s, ok := r.shards[shardID]
	if !ok {
		return fmt.Errorf("unknown shard %s", shardID)
	}
	s.gap = nil // handling moved on: what the gap would skip is decided here
	if err := r.position(ctx, shardID, s, typ, seq); err != nil {
		if !isTrimmed(err) {
			return err
		}
		// seq aged out of the stream: the next read starts over from
		// the trim horizon and reports what was lost.
		s.resumeType, s.resumeSeq = typ, seq
		restart(s)
		return nil
	}
	s.resumeType, s.resumeSeq = typ, seq
	return nil
}

func (r *StreamReader) lambdaRecord(rec streamtypes.Record) (events.DynamoDBEventRecord, error) {
	return LambdaRecord(rec, r.arn, r.opts.Region)
}

// LambdaRecord converts a record read with the DynamoDB Streams API into
// the form Lambda delivers, with eventSourceARN arn and, when the record
// has none, awsRegion region.
func LambdaRecord(rec streamtypes.Record, arn, region string) (events.DynamoDBEventRecord, error) {
	out := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(rec.AwsRegion),
		EventID:        aws.ToString(rec.EventID),
		EventName:      string(rec.EventName),
		EventSource:    aws.ToString(rec.EventSource),
		EventVersion:   aws.ToString(rec.EventVersion),
		EventSourceArn: arn,
	}
	if out.AWSRegion == "" {
		out.AWSRegion = region
	}
	if rec.UserIdentity != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{Type: aws.ToString(rec.UserIdentity.Type), PrincipalID: aws.ToString(rec.UserIdentity.PrincipalId)}
	}
	d := rec.Dynamodb
	if d == nil {
		return out, fmt.Errorf("record %s has no dynamodb section", out.EventID)
	}
	var err error
	if out.Change.Keys, err = LambdaImage(d.Keys); err != nil {
		return out, fmt.Errorf("record %s keys: %w", out.EventID, err)
	}
	if out.Change.NewImage, err = LambdaImage(d.NewImage); err != nil {
		return out, fmt.Errorf("record %s new image: %w", out.EventID, err)
	}
	if out.Change.OldImage, err = LambdaImage(d.OldImage); err != nil {
		return out, fmt.Errorf("record %s old image: %w", out.EventID, err)
	}
	if d.ApproximateCreationDateTime != nil {
		out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
	}
	out.Change.SequenceNumber = aws.ToString(d.SequenceNumber)
	out.Change.SizeBytes = aws.ToInt64(d.SizeBytes)
	out.Change.StreamViewType = string(d.StreamViewType)
	return out, nil
}

// Handler processes one stream batch like the Lambda function does;
// (*Consumer).Handle is one.
type Handler func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// PollOptions configure Poll.
type PollOptions struct {
	// Interval is the pause after a round that found nothing new or had
	// a failure. Default: 1 s.
	Interval time.Duration
	// MaxRetries is how often a failed record is retried before the
	// poller gives up on it, like the event source mapping's
	// MaximumRetryAttempts; a negative value (Lambda's -1) retries until
	// the record is older than MaxRecordAge. Default: 3.
	MaxRetries int
	// MaxRecordAge gives up on a failed record once it is older than this
	// (its ApproximateCreationDateTime, by Now), like the mapping's
	// MaximumRecordAgeInSeconds. Default: no age limit.
	MaxRecordAge time.Duration
	// Now is the clock of MaxRecordAge and of the failure records.
	// Default: time.Now.
	Now func() time.Time
	// OnFailure receives, for every record the poller gives up on, the
	// record Lambda sends to the mapping's on-failure destination
	// (FailureRecord: the shard and the sequence number range, not the
	// data). An error stops Poll. Default: none (the record is logged).
	OnFailure func(ctx context.Context, rec FailureRecord) error
	// OnLost receives every range of records that aged out of the stream
	// before the reader read them (LostRange, also logged as LOST FROM THE
	// STREAM; Lambda loses such records without a word). An error stops
	// Poll. Default: none (the range is logged).
	OnLost func(ctx context.Context, lost LostRange) error
	// Logger receives one line per skipped record, and the reader's LOST
	// FROM THE STREAM lines unless StreamReaderOptions.Logger is set.
	// Default: slog.Default().
	Logger *slog.Logger
}

// FailureRecord is the on-failure record of a DynamoDB stream event source
// mapping: what Lambda sends to the mapping's destination (an SQS queue or
// SNS topic) when it gives up on a batch. It locates the records; it does
// not hold them, so they must be re-read from the stream within its 24
// hours (cmd/triggers-replay).
type FailureRecord struct {
	// RequestContext says why Lambda gave up.
	RequestContext FailureContext `json:"requestContext"`
	// Version is "1.0".
	Version string `json:"version"`
	// Timestamp is when Lambda gave up, RFC 3339 UTC.
	Timestamp string `json:"timestamp"`
	// BatchInfo locates the records given up on.
	BatchInfo *BatchInfo `json:"DDBStreamBatchInfo"`
}

// FailureContext is the requestContext of a FailureRecord.
type FailureContext struct {
	// RequestID is the last invocation's request id.
	RequestID string `json:"requestId,omitempty"`
	// FunctionArn is the function's ARN.
	FunctionArn string `json:"functionArn,omitempty"`
	// Condition is RetryAttemptsExhausted or RecordAgeExceeded
	// (ConditionRetriesExhausted, ConditionRecordAgeExceeded).
	Condition string `json:"condition"`
	// ApproximateInvokeCount is how often the records were tried.
	ApproximateInvokeCount int `json:"approximateInvokeCount"`
}

// Conditions of a FailureContext.
const (
	ConditionRetriesExhausted  = "RetryAttemptsExhausted"
	ConditionRecordAgeExceeded = "RecordAgeExceeded"
)

// BatchInfo is the DDBStreamBatchInfo of a FailureRecord: the shard and
// the inclusive range of sequence numbers given up on.
type BatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord,omitempty"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord,omitempty"`
	BatchSize                       int    `json:"batchSize"`
	StreamArn                       string `json:"streamArn"`
}

// Poll reads the stream until ctx ends, calling h for each shard batch.
// Like Lambda with ReportBatchItemFailures it retries a shard from the
// lowest failed sequence number (from the batch's first record when h
// returns an error, or reports a failure whose identifier is empty or no
// sequence number of the batch); after MaxRetries, or once that record is older than
// MaxRecordAge, it skips the record, logs it and hands OnFailure the
// record Lambda would send to the on-failure destination. Records that
// aged out of the stream before they were read are logged as LOST FROM
// THE STREAM and handed to OnLost. Poll returns ctx's error, the first
// error of the Streams API, or OnFailure's or OnLost's.
func (r *StreamReader) Poll(ctx context.Context, h Handler, o PollOptions) error {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 3
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if r.opts.Logger == nil {
		r.log = o.Logger
	}
	type failing struct {
		seq string
		n   int
	}
	retries := map[string]failing{} // shard -> its lowest failed record and failures so far
	for {
		// Batches read before an error are handled before returning it.
		batches, nextErr := r.Next(ctx)
		failed := false
		for _, b := range batches {
			resp, herr := h(ctx, b.Event)
			seq, whole := lowestFailed(resp, b.Event.Records)
			if herr != nil || whole {
				seq = b.Event.Records[0].Change.SequenceNumber
			}
			if seq == "" {
				delete(retries, b.ShardID)
				continue
			}
			failed = true
			f := retries[b.ShardID]
			if f.seq != seq {
				f = failing{seq: seq}
			}
			f.n++
			rec := recordOf(b.Event.Records, seq)
			condition := ""
			switch {
			case o.MaxRecordAge > 0 && !rec.Change.ApproximateCreationDateTime.IsZero() && o.Now().Sub(rec.Change.ApproximateCreationDateTime.Time) > o.MaxRecordAge:
				condition = ConditionRecordAgeExceeded
			case o.MaxRetries >= 0 && f.n > o.MaxRetries:
				condition = ConditionRetriesExhausted
			}
			var err error
			if condition == "" {
				retries[b.ShardID] = f
				err = r.Rewind(ctx, b.ShardID, seq)
			} else {
				delete(retries, b.ShardID)
				o.Logger.LogAttrs(ctx, slog.LevelError, "stream record failed too often: skipping it",
					slog.String("shard_id", b.ShardID), slog.String("sequence_number", seq), slog.Int("attempts", f.n),
					slog.String("condition", condition))
				if o.OnFailure != nil {
					err = o.OnFailure(ctx, r.failureRecord(b.ShardID, rec, condition, f.n, o.Now()))
				}
				if err == nil {
					err = r.SkipPast(ctx, b.ShardID, seq)
				}
			}
			if err != nil {
				return err
			}
		}
		for len(r.unreported) > 0 {
			l := r.unreported[0]
			r.unreported = r.unreported[1:]
			if o.OnLost != nil {
				if err := o.OnLost(ctx, l); err != nil {
					return err
				}
			}
		}
		if nextErr != nil {
			return nextErr
		}
		if len(batches) > 0 && !failed {
			continue // more may be waiting
		}
		// Nothing new, or a failure: pause before the next round.
		if err := backoff.Sleep(ctx, o.Interval); err != nil {
			return err
		}
	}
}

// recordOf returns the record of recs with sequence number seq, or one
// holding only seq.
func recordOf(recs []events.DynamoDBEventRecord, seq string) events.DynamoDBEventRecord {
	for _, r := range recs {
		if r.Change.SequenceNumber == seq {
			return r
		}
	}
	var r events.DynamoDBEventRecord
	r.Change.SequenceNumber = seq
	return r
}

// failureRecord is the on-failure record of the one record rec of shard
// given up on after attempts tries.
func (r *StreamReader) failureRecord(shard string, rec events.DynamoDBEventRecord, condition string, attempts int, now time.Time) FailureRecord {
	arrival := ""
	if t := rec.Change.ApproximateCreationDateTime; !t.IsZero() {
		arrival = t.UTC().Format(time.RFC3339)
	}
	seq := rec.Change.SequenceNumber
	return FailureRecord{
		RequestContext: FailureContext{Condition: condition, ApproximateInvokeCount: attempts},
		Version:        "1.0",
		Timestamp:      now.UTC().Format("2006-01-02T15:04:05.000Z"),
		BatchInfo: &BatchInfo{
			ShardID: shard, StartSequenceNumber: seq, EndSequenceNumber: seq,
			ApproximateArrivalOfFirstRecord: arrival, ApproximateArrivalOfLastRecord: arrival,
			BatchSize: 1, StreamArn: r.arn,
		},
	}
}

// lowestFailed returns the lowest sequence number among resp's failures
// ("" when there are none), and whole when a failure has an empty
// identifier or one that is no sequence number of recs (the batch),
// which Lambda treats as a failure of the whole batch.
func lowestFailed(resp events.DynamoDBEventResponse, recs []events.DynamoDBEventRecord) (low string, whole bool) {
	for _, f := range resp.BatchItemFailures {
		s := f.ItemIdentifier
		if s == "" || !slices.ContainsFunc(recs, func(r events.DynamoDBEventRecord) bool { return r.Change.SequenceNumber == s }) {
			return "", true
		}
		if low == "" || sequenceLess(s, low) {
			low = s
		}
	}
	return low, false
}
