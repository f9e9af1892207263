package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

// Putter is the part of the S3 client the archiver uses; *s3.Client
// implements it.
type Putter interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// DefaultConcurrency is how many objects an invocation writes at once.
const DefaultConcurrency = 8

// ContentType of every archived object: the body is gzip; the lines inside
// are JSON. No Content-Encoding is set, so downloads keep the .gz bytes.
const ContentType = "application/gzip"

// Config configures an Archiver.
type Config struct {
	// Putter writes objects. Required.
	Putter Putter
	// Bucket is the archive bucket's name. Required.
	Bucket string
	// Prefix starts every key; it is empty or ends in "/".
	// Default: contract.DefaultArchivePrefix ("expired/").
	Prefix string
	// Concurrency bounds the PutObject calls in flight.
	// Default: DefaultConcurrency.
	Concurrency int
	// Logger receives one line per failed invocation part.
	// Default: slog.Default().
	Logger *slog.Logger
	// DeadLetter, when set, takes the records that can never be archived
	// (ErrMalformed: no old image, an image that is not an event, a record
	// that does not decode) with their content (streamconsumer.SQSDeadLetter on
	// the event source mapping's failure queue, in Lambda). Once parked, a
	// record counts as handled, so the shard moves past it: with the
	// mapping's unlimited retries a malformed record would otherwise hold
	// up every later TTL deletion of its shard until the maximum record
	// age. Default: none; a malformed record is a batch item failure.
	DeadLetter streamconsumer.DeadLetter
}

// Archiver writes the TTL deletions of stream batches to S3.
type Archiver struct {
	cfg Config
	log *slog.Logger
}

// New returns an archiver for cfg, or an error naming the bad setting.
func New(cfg Config) (*Archiver, error) {
	var errs []error
	if cfg.Putter == nil {
		errs = append(errs, errors.New("archive: Config.Putter is nil: pass an *s3.Client"))
	}
	if strings.TrimSpace(cfg.Bucket) == "" {
		errs = append(errs, errors.New("archive: Config.Bucket is empty: pass the archive bucket's name"))
	}
	if cfg.Prefix == "" {
		cfg.Prefix = contract.DefaultArchivePrefix
	}
	if !strings.HasSuffix(cfg.Prefix, "/") || strings.HasPrefix(cfg.Prefix, "/") {
		errs = append(errs, fmt.Errorf("archive: Config.Prefix %q must end in \"/\" and not start with one (such as %q)", cfg.Prefix, contract.DefaultArchivePrefix))
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Archiver{cfg: cfg, log: log}, nil
}

// Handle archives the TTL deletions of one stream batch. Records that are
// not archived are skipped; malformed ones are parked when Config has a
// DeadLetter, once the objects are written, and only those before the
// lowest record of an object that failed (the ones after it come back with
// Lambda's retry, and are parked then: once, not once per retry). It returns, in batchItemFailures, every record of an object
// that could not be written and every malformed record not parked;
// Lambda then retries from the lowest of them (records after it that were
// written are written again under the same or, if the batch differs,
// another key: the archive is at least once, readers deduplicate by
// event_id). The error is non-nil only for a failed record without a
// sequence number, which Lambda could not retry on its own.
func (a *Archiver) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return a.handle(ctx, ev.Records, nil, nil)
}

// HandleJSON is Handle on the raw invocation payload, and what the Lambda
// function registers: every record is decoded on its own, so one record
// aws-lambda-go cannot decode is reported as failed instead of failing the
// whole invocation before any code runs.
func (a *Archiver) HandleJSON(ctx context.Context, payload json.RawMessage) (events.DynamoDBEventResponse, error) {
	recs, raws, undecodable, err := streamconsumer.DecodeRecords(payload)
	if err != nil {
		return events.DynamoDBEventResponse{}, err
	}
	for i, err := range undecodable {
		undecodable[i] = fmt.Errorf("%w: cannot decode the record: %v", ErrMalformed, err)
	}
	return a.handle(ctx, recs, undecodable, raws)
}

// handle archives recs; undecodable holds the records (by index) that
// could not even be decoded, raws the records' JSON when the caller has it
// (parked as they arrived).
func (a *Archiver) handle(ctx context.Context, recs []events.DynamoDBEventRecord, undecodable map[int]error, raws []json.RawMessage) (events.DynamoDBEventResponse, error) {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	var lines []Line
	type bad struct {
		i   int
		err error
	}
	var malformed []bad
	for i, r := range recs {
		err := undecodable[i]
		var line Line
		var ok bool
		if err == nil {
			line, ok, err = Convert(r)
		}
		if err != nil {
			malformed = append(malformed, bad{i, err})
			continue
		}
		if ok {
			lines = append(lines, line)
		}
	}
	objs, err := Build(a.cfg.Prefix, lines)
	if err != nil {
		return resp, fmt.Errorf("build archive objects: %w", err)
	}
	errs := a.putAll(ctx, objs)
	var failed []string
	for i, o := range objs {
		if errs[i] == nil {
			continue
		}
		a.log.ErrorContext(ctx, "archive object not written", "bucket", a.cfg.Bucket, "key", o.Key,
			"tenant", o.Tenant, "records", len(o.SequenceNumbers), "error", errs[i].Error())
		failed = append(failed, o.SequenceNumbers...)
	}
	// Lambda retries from the lowest failed record: a malformed record
	// after it comes back with the retry, so it is parked then, not now
	// (parked now, it would be parked again on every retry).
	lowest := lowestSequence(failed)
	var firstMalformed error
	unparked := 0
	for _, m := range malformed {
		r := recs[m.i]
		seq := r.Change.SequenceNumber
		if lowest != "" && seq != "" && sequenceLess(lowest, seq) {
			continue
		}
		err := m.err
		if a.cfg.DeadLetter != nil {
			perr := a.park(ctx, r, raws, m.i, err)
			if perr == nil {
				continue
			}
			err = fmt.Errorf("%w (and %v)", err, perr)
		}
		unparked++
		if firstMalformed == nil {
			firstMalformed = err
			a.log.ErrorContext(ctx, "malformed TTL record: it can never be archived",
				"sequence_number", seq, "event_name", r.EventName, "error", err.Error())
		}
		failed = append(failed, seq)
	}
	if unparked > 1 {
		a.log.ErrorContext(ctx, "malformed TTL records in batch", "count", unparked)
	}
	for _, seq := range failed {
		if seq == "" {
			return resp, errors.New("a failed stream record has no sequence number: the whole batch is retried")
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
	}
	a.log.DebugContext(ctx, "batch archived", "records", len(recs), "archived", len(lines), "objects", len(objs), "failed_records", len(failed))
	return resp, nil
}

// lowestSequence returns the lowest of the stream sequence numbers seqs
// ("" when there is none, or when one is empty: then nothing is known to
// come back).
func lowestSequence(seqs []string) string {
	low := ""
	for _, s := range seqs {
		if s == "" {
			return ""
		}
		if low == "" || sequenceLess(s, low) {
			low = s
		}
	}
	return low
}

// sequenceLess compares two stream sequence numbers, decimal strings of
// up to 40 digits: as numbers, by length first.
func sequenceLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// park hands record i to the dead-letter queue with the reason err and
// logs it once parked.
func (a *Archiver) park(ctx context.Context, r events.DynamoDBEventRecord, raws []json.RawMessage, i int, reason error) error {
	var raw json.RawMessage
	if i < len(raws) {
		raw = raws[i]
	} else {
		var err error
		if raw, err = streamconsumer.MarshalRecord(r); err != nil {
			return err
		}
	}
	if err := a.cfg.DeadLetter.Park(ctx, raw, reason.Error()); err != nil {
		return err
	}
	a.log.LogAttrs(ctx, slog.LevelWarn, "malformed TTL record parked in the dead-letter queue: it can never be archived",
		slog.String("sequence_number", r.Change.SequenceNumber),
		slog.String("event_name", r.EventName),
		slog.String("stream_event_id", r.EventID),
		slog.String("event_source_arn", r.EventSourceArn),
		slog.String("error", reason.Error()))
	return nil
}

// putAll writes objs with at most Concurrency calls in flight and returns
// each one's error.
func (a *Archiver) putAll(ctx context.Context, objs []Object) []error {
	errs := make([]error, len(objs))
	sem := make(chan struct{}, a.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range objs {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			errs[i] = a.put(ctx, objs[i])
		}(i)
	}
	wg.Wait()
	return errs
}

func (a *Archiver) put(ctx context.Context, o Object) error {
	var body io.ReadSeeker = bytes.NewReader(o.Body)
	_, err := a.cfg.Putter.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(a.cfg.Bucket),
		Key:           aws.String(o.Key),
		Body:          body,
		ContentLength: aws.Int64(int64(len(o.Body))),
		ContentType:   aws.String(ContentType),
	})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", a.cfg.Bucket, o.Key, err)
	}
	return nil
}
