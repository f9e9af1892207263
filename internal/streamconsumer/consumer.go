// Package streamconsumer is the stream consumer of the events table: it turns
// the table's DynamoDB stream (view NEW_IMAGE) into messages on the
// delivery queue, one per newly inserted event ("streams as the outbox":
// ingestion writes DynamoDB only).
//
// Only INSERT records of events are delivered; MODIFY (status updates),
// REMOVE (deletions, TTL expiry included) and idempotency records are
// skipped. Each event becomes one SQS message whose body is the event's
// public JSON (MarshalEvent) with the String attributes tenant and
// event_type. Delivery is at least once: a record is retried until every
// record before it was sent, so consumers deduplicate by event_id.
//
// The queue sits behind Sender (SendMessageBatch only): *sqs.Client in
// Lambda, streampoll.SinkFunc or WriterSink locally; streampoll's
// StreamReader (local-only, internal/dev) reads a table's stream with the
// DynamoDB Streams API and yields the same events.DynamoDBEvent batches
// Lambda would. See docs/delivery.md.
package streamconsumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/triggers-dev/triggers/internal/backoff"
	"github.com/triggers-dev/triggers/schema"
)

// Sender is the part of the SQS client the consumer uses; *sqs.Client
// implements it, and so do streampoll.SinkFunc and WriterSink locally.
type Sender interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// Limits of SendMessageBatch.
const (
	// MaxBatchEntries is the most entries one SendMessageBatch call takes.
	MaxBatchEntries = 10
	// DefaultMaxBatchBytes bounds the summed message sizes of one call:
	// 256 KiB, the historical SQS limit, so the consumer works with any
	// queue. A single larger message is sent alone.
	DefaultMaxBatchBytes = 256 * 1024
	// DefaultMaxAttempts is how often an entry that failed with a
	// retryable error is sent, the first attempt included.
	DefaultMaxAttempts = 3
)

// Config configures a Consumer.
type Config struct {
	// Publisher sends the messages. Default: SQSPublisher{Sender,
	// QueueURL}.
	Publisher Publisher
	// Sender sends message batches to QueueURL, when Publisher is nil.
	Sender Sender
	// QueueURL is the delivery queue. Required (it names the destination
	// in logs; sinks ignore it).
	QueueURL string
	// Logger receives one JSON line per malformed record and per failed
	// invocation. Default: slog.Default().
	Logger *slog.Logger
	// MaxAttempts bounds the sends of an entry that fails with a
	// retryable error (SenderFault false), the first included. Errors of
	// the whole call are not retried here: the SDK's retryer already
	// retried them. Default: DefaultMaxAttempts.
	MaxAttempts int
	// MaxBatchBytes bounds the summed message sizes of one call.
	// Default: DefaultMaxBatchBytes.
	MaxBatchBytes int
	// Sleep waits between attempts. Default: a context-aware timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// DeadLetter, when set, takes malformed records with their content
	// (SQSDeadLetter in Lambda): once parked, a record counts as handled,
	// so the shard moves past it instead of retrying it to the event
	// source mapping's limits. Default: none; a malformed record is a
	// batch item failure (the mapping's bisect, retries and on-failure
	// destination then deal with it).
	DeadLetter DeadLetter
	// Region is the consumer's own region (AWS_REGION). When set, a
	// record of an event another region accepted (schema.AttrOriginRegion
	// names another region: a global table's replicated write) is skipped:
	// that region's consumer delivers it (docs/multi-region.md). Records
	// without the attribute are local. Default: "", every record is local.
	Region string
}

// Foreign reports whether r is a replicated write: its item (NewImage, or
// OldImage for a REMOVE, whose NewImage is empty) names in
// schema.AttrOriginRegion a region other than region. With region empty,
// or an item without the attribute (written before the table had
// replicas, or by a single-region service), it is false: the record is
// local.
func Foreign(r events.DynamoDBEventRecord, region string) bool {
	if region == "" {
		return false
	}
	image := r.Change.NewImage
	if r.EventName == string(events.DynamoDBOperationTypeRemove) || len(image) == 0 {
		image = r.Change.OldImage
	}
	origin, ok := image[schema.AttrOriginRegion]
	if !ok || origin.DataType() != events.DataTypeString {
		return false
	}
	return origin.String() != region
}

// DeadLetter parks records that can never be delivered.
type DeadLetter interface {
	// Park keeps record (its JSON as Lambda delivered it) with the reason.
	Park(ctx context.Context, record json.RawMessage, reason string) error
}

// DeadLetterSender is the part of the SQS client SQSDeadLetter uses.
type DeadLetterSender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SQSDeadLetter parks records on an SQS queue, one message each:
// {"reason": "...", "record": {...}} (the record as Lambda delivered it,
// enough for triggers-replay or an operator to act on).
type SQSDeadLetter struct {
	Client   DeadLetterSender
	QueueURL string
	// AttributeBytes is what message attributes that Client adds to
	// each message take (triggers-replay marks the records it parks):
	// they count toward the queue's limit, so Park parks a record
	// without its images once its message passes
	// DefaultQueueMessageBytes less AttributeBytes. Default 0: a Client
	// that adds none.
	AttributeBytes int
}

// DefaultQueueMessageBytes is the largest message a queue created
// without MaximumMessageSize takes (SQS's default, 256 KiB), as the
// constructs' failure queues are.
const DefaultQueueMessageBytes = 256 << 10

// Park implements DeadLetter. A record whose message is larger than
// DefaultQueueMessageBytes less AttributeBytes (an image of a 400 KB
// item, in Lambda's JSON, may be a megabyte or more) and that the queue
// refuses is parked without
// its images, the reason saying so: its keys, sequence number and event
// id still name it (the item itself is gone, or readable by its keys).
// Refused every time, it would otherwise hold its shard up until the
// mapping's maximum record age, which parking is there to prevent.
func (d SQSDeadLetter) Park(ctx context.Context, record json.RawMessage, reason string) error {
	body, err := parkedMessage(record, reason)
	if err != nil {
		return err
	}
	_, err = d.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(d.QueueURL), MessageBody: aws.String(string(body))})
	if err != nil && len(body) > DefaultQueueMessageBytes-d.AttributeBytes {
		if short, serr := withoutImages(record); serr == nil {
			body, err2 := parkedMessage(short, fmt.Sprintf("%s (the record, %d bytes, is too large for the queue: parked without its images)", reason, len(record)))
			if err2 == nil {
				_, err2 = d.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(d.QueueURL), MessageBody: aws.String(string(body))})
			}
			if err2 == nil {
				return nil
			}
			err = fmt.Errorf("%w; without its images: %w", err, err2)
		}
	}
	if err != nil {
		return fmt.Errorf("park a malformed record on %s: %w", d.QueueURL, err)
	}
	return nil
}

// parkedMessage is the body of a parked record's message.
func parkedMessage(record json.RawMessage, reason string) ([]byte, error) {
	return json.Marshal(struct {
		Reason string          `json:"reason"`
		Record json.RawMessage `json:"record"`
	}{reason, record})
}

// withoutImages returns record (a stream record's JSON) without the
// NewImage and OldImage of its dynamodb section.
func withoutImages(record json.RawMessage) (json.RawMessage, error) {
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(record, &rec); err != nil {
		return nil, err
	}
	var change map[string]json.RawMessage
	if err := json.Unmarshal(rec["dynamodb"], &change); err != nil {
		return nil, err
	}
	delete(change, "NewImage")
	delete(change, "OldImage")
	b, err := json.Marshal(change)
	if err != nil {
		return nil, err
	}
	rec["dynamodb"] = b
	return json.Marshal(rec)
}

// Consumer forwards inserted events from stream batches to the queue.
type Consumer struct {
	pub         Publisher
	queueURL    string
	log         *slog.Logger
	maxAttempts int
	maxBytes    int
	sleep       func(context.Context, time.Duration) error
	dead        DeadLetter
	region      string
}

// New returns a consumer for cfg.
func New(cfg Config) (*Consumer, error) {
	if cfg.Publisher == nil && cfg.Sender == nil {
		return nil, errors.New("delivery: Config.Publisher and Config.Sender are nil: pass an *sqs.Client as Sender, or a Publisher")
	}
	if cfg.QueueURL == "" {
		return nil, errors.New("delivery: Config.QueueURL is empty: set it to the delivery queue URL")
	}
	c := &Consumer{pub: cfg.Publisher, queueURL: cfg.QueueURL, log: cfg.Logger, maxAttempts: cfg.MaxAttempts, maxBytes: cfg.MaxBatchBytes, sleep: cfg.Sleep, dead: cfg.DeadLetter, region: cfg.Region}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.pub == nil {
		c.pub = SQSPublisher{Client: cfg.Sender, QueueURL: cfg.QueueURL}
	}
	if c.maxAttempts <= 0 {
		c.maxAttempts = DefaultMaxAttempts
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBatchBytes
	}
	if c.sleep == nil {
		c.sleep = backoff.Sleep
	}
	return c, nil
}

// retryBase is the first retry delay (see backoff.Delay).
const retryBase = 50 * time.Millisecond

// pending is a record to send: its index in the batch and its message.
type pending struct {
	index int
	msg   Message
}

// Handle processes one stream batch (one shard's records, in order) and
// reports partial failures: the first record that could not be handled
// and every record after it, so that Lambda (ReportBatchItemFailures)
// resumes from that record and no later record is checkpointed before
// it. Records after a failure are not sent in this invocation. Handle
// returns an error only when the failed record has no sequence number to
// report.
func (c *Consumer) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return c.handle(ctx, ev.Records, nil, nil)
}

// HandleJSON is Handle on the raw invocation payload, and what the Lambda
// function registers. It decodes each record on its own, so that a record
// aws-lambda-go cannot decode (an attribute type it does not know, say)
// is a malformed record like any other, reported and logged once, instead
// of failing the whole invocation before any code of ours runs. Only a
// payload that is not a stream event at all is an error.
func (c *Consumer) HandleJSON(ctx context.Context, payload json.RawMessage) (events.DynamoDBEventResponse, error) {
	recs, raws, undecodable, err := DecodeRecords(payload)
	if err != nil {
		return events.DynamoDBEventResponse{}, err
	}
	for i, err := range undecodable {
		undecodable[i] = fmt.Errorf("%w: cannot decode the record: %v", ErrMalformed, err)
	}
	return c.handle(ctx, recs, undecodable, raws)
}

// DecodeRecords decodes a DynamoDB stream invocation payload record by
// record: a record aws-lambda-go cannot decode (an attribute type it does
// not know, say) keeps what identifies it (event id and name, source ARN,
// sequence number) and its decoding error in undecodable, by index, so
// the caller can report it alone. raws are the records' JSON. Only a
// payload that is not a stream event at all is an error.
func DecodeRecords(payload json.RawMessage) (recs []events.DynamoDBEventRecord, raws []json.RawMessage, undecodable map[int]error, err error) {
	var env struct {
		Records []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(payload, &env); err != nil {
		return nil, nil, nil, fmt.Errorf("decode DynamoDB stream event: %w", err)
	}
	recs = make([]events.DynamoDBEventRecord, len(env.Records))
	for i, raw := range env.Records {
		if err := json.Unmarshal(raw, &recs[i]); err != nil {
			var id struct {
				EventID        string `json:"eventID"`
				EventName      string `json:"eventName"`
				EventSourceArn string `json:"eventSourceARN"`
				Dynamodb       struct {
					SequenceNumber string `json:"SequenceNumber"`
				} `json:"dynamodb"`
			}
			_ = json.Unmarshal(raw, &id)
			recs[i] = events.DynamoDBEventRecord{EventID: id.EventID, EventName: id.EventName, EventSourceArn: id.EventSourceArn}
			recs[i].Change.SequenceNumber = id.Dynamodb.SequenceNumber
			if undecodable == nil {
				undecodable = map[int]error{}
			}
			undecodable[i] = err
		}
	}
	return recs, env.Records, undecodable, nil
}

// MarshalRecord returns the JSON of r as Lambda delivers it, to park. A
// record whose attribute values aws-lambda-go cannot encode (content that
// does not match its data type, such as the zero DynamoDBAttributeValue,
// on which its encoder panics) is an error, never a panic.
func MarshalRecord(r events.DynamoDBEventRecord) (raw json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			raw, err = nil, fmt.Errorf("encode the stream record: %v", p)
		}
	}()
	return json.Marshal(r)
}

// handle processes recs; undecodable holds the records (by index) that
// could not even be decoded, raws the records' JSON when the caller has it.
func (c *Consumer) handle(ctx context.Context, recs []events.DynamoDBEventRecord, undecodable map[int]error, raws []json.RawMessage) (events.DynamoDBEventResponse, error) {
	firstFail := len(recs)
	var toSend []pending
	for i, r := range recs {
		d, msg, err := Skip, Message{}, undecodable[i]
		if err == nil && Foreign(r, c.region) {
			// Another region accepted this event; its consumer delivers it.
			continue
		}
		if err == nil {
			d, msg, err = Decide(r)
		}
		if err != nil && c.dead != nil {
			raw, perr := json.RawMessage(nil), error(nil)
			if raws != nil {
				raw = raws[i]
			} else {
				raw, perr = MarshalRecord(r)
			}
			if perr == nil {
				perr = c.dead.Park(ctx, raw, err.Error())
			}
			if perr == nil {
				c.log.LogAttrs(ctx, slog.LevelWarn, "malformed stream record parked in the dead-letter queue",
					slog.String("sequence_number", r.Change.SequenceNumber),
					slog.String("event_name", r.EventName),
					slog.String("stream_event_id", r.EventID),
					slog.String("event_source_arn", r.EventSourceArn),
					slog.String("error", err.Error()))
				continue
			}
			err = fmt.Errorf("%w (and %v)", err, perr)
		}
		if err != nil {
			c.log.LogAttrs(ctx, slog.LevelError, "malformed stream record: it can never be delivered",
				slog.String("sequence_number", r.Change.SequenceNumber),
				slog.String("event_name", r.EventName),
				slog.String("stream_event_id", r.EventID),
				slog.String("event_source_arn", r.EventSourceArn),
				slog.String("error", err.Error()))
			firstFail = i
			break
		}
		if d == Deliver {
			toSend = append(toSend, pending{index: i, msg: msg})
		}
	}

	sent := 0
	var sendErr *sendFailure
	for start := 0; start < len(toSend); {
		end := c.chunkEnd(toSend, start)
		n, f := c.sendChunk(ctx, toSend[start:end])
		sent += n
		if f != nil {
			sendErr = f
			firstFail = min(firstFail, f.index)
			break
		}
		start = end
	}

	// An empty list (not null) when all succeeded: Lambda reads either as
	// success, the empty list is clearer in logs.
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	for _, r := range recs[firstFail:] {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
	}
	if sendErr != nil {
		r := recs[sendErr.index]
		c.log.LogAttrs(ctx, slog.LevelError, "cannot send events to the delivery queue: Lambda retries from the first failed record",
			slog.String("queue_url", c.queueURL),
			slog.String("sequence_number", r.Change.SequenceNumber),
			slog.String("event_source_arn", r.EventSourceArn),
			slog.String("tenant", sendErr.msg.Tenant),
			slog.String("event_id", sendErr.msg.EventID),
			slog.Int("sent", sent),
			slog.Int("failed_records", len(recs)-firstFail),
			slog.String("error", sendErr.err.Error()))
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "stream batch processed",
		slog.Int("records", len(recs)), slog.Int("sent", sent), slog.Int("failed_records", len(recs)-firstFail))
	if firstFail < len(recs) && recs[firstFail].Change.SequenceNumber == "" {
		return resp, fmt.Errorf("record %d failed and has no sequence number to report: failing the whole batch", firstFail)
	}
	return resp, nil
}

// chunkEnd returns the end of the chunk starting at start: at most
// MaxBatchEntries messages within the byte budget (at least one).
func (c *Consumer) chunkEnd(ps []pending, start int) int {
	end, size := start, 0
	for end < len(ps) && end-start < MaxBatchEntries {
		s := ps[end].msg.size()
		if end > start && size+s > c.maxBytes {
			break
		}
		size += s
		end++
	}
	return end
}

// sendFailure is the first record of a chunk that could not be sent.
type sendFailure struct {
	index int
	msg   Message
	err   error
}

// sendChunk publishes ps in one Publish call, retrying messages that
// failed with a retryable error up to maxAttempts times. It returns how
// many were sent and the failed record with the lowest index (nil when
// all were sent).
func (c *Consumer) sendChunk(ctx context.Context, ps []pending) (sent int, failed *sendFailure) {
	fail := func(p pending, err error) {
		if failed == nil || p.index < failed.index {
			failed = &sendFailure{index: p.index, msg: p.msg, err: err}
		}
	}
	// ps is never empty: a chunk holds at least one message, and only a
	// non-empty retry list comes back round.
	for attempt := 1; ; attempt++ {
		entries := make([]Entry, len(ps))
		for i, p := range ps {
			entries[i] = Entry{ID: strconv.Itoa(p.index), Message: p.msg}
		}
		errs, err := c.pub.Publish(ctx, entries)
		if err != nil {
			for _, p := range ps {
				fail(p, err)
			}
			return sent, failed
		}
		var retry []pending
		var retryErr error
		for i, p := range ps {
			e := errs[i]
			if e == nil {
				sent++
			} else if errors.Is(e, ErrRetryable) {
				retryErr = fmt.Errorf("%w (attempt %d)", e, attempt)
				retry = append(retry, p)
			} else {
				fail(p, fmt.Errorf("%w (attempt %d)", e, attempt))
			}
		}
		if len(retry) == 0 {
			break
		}
		if attempt >= c.maxAttempts {
			for _, p := range retry {
				fail(p, retryErr)
			}
			break
		}
		if err := c.sleep(ctx, backoff.Delay(retryBase, attempt)); err != nil {
			for _, p := range retry {
				fail(p, fmt.Errorf("%v; not retried: %w", retryErr, err))
			}
			break
		}
		ps = retry
	}
	return sent, failed
}

// Publisher is the seam between the consumer and where deliveries go:
// SQSPublisher in Lambda, make dev's sinks locally (one Message type on
// both sides, nothing rebuilt from SQS entries).
type Publisher interface {
	// Publish sends 1 to MaxBatchEntries entries and returns one error
	// per entry, in order: nil when it was sent; wrapping ErrRetryable
	// when trying again may help. The second result fails the whole call
	// (not retried here: the SDK's retryer already retried it).
	Publish(ctx context.Context, entries []Entry) ([]error, error)
}

// Entry is one message to publish with an id unique within its call (the
// record's index in its stream batch, stable across retries; SQS's batch
// entry id).
type Entry struct {
	ID string
	Message
}

// ErrRetryable marks per-message Publish errors worth retrying.
var ErrRetryable = errors.New("retryable")

// SQSPublisher publishes to an SQS queue with SendMessageBatch: each
// message's body is the event's JSON, with the String attributes tenant
// and event_type.
type SQSPublisher struct {
	Client   Sender
	QueueURL string
}

// Publish implements Publisher. An entry SQS failed without sender fault
// (internal error, throttling), or left out of its result, is retryable;
// one with sender fault (too large, invalid) is not.
func (p SQSPublisher) Publish(ctx context.Context, msgs []Entry) ([]error, error) {
	entries := make([]sqstypes.SendMessageBatchRequestEntry, len(msgs))
	pos := make(map[string]int, len(msgs))
	for i, m := range msgs {
		pos[m.ID] = i
		entries[i] = sqstypes.SendMessageBatchRequestEntry{
			Id:          aws.String(m.ID),
			MessageBody: aws.String(string(m.Body)),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				AttrTenant:    {DataType: aws.String("String"), StringValue: aws.String(m.Tenant)},
				AttrEventType: {DataType: aws.String("String"), StringValue: aws.String(m.EventType)},
			},
		}
	}
	out, err := p.Client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(p.QueueURL), Entries: entries})
	if err != nil {
		return nil, fmt.Errorf("SendMessageBatch: %w", err)
	}
	errs := make([]error, len(msgs))
	seen := make([]bool, len(msgs))
	index := func(id *string) (int, bool) {
		i, ok := pos[aws.ToString(id)]
		return i, ok && !seen[i]
	}
	for _, s := range out.Successful {
		if i, ok := index(s.Id); ok {
			seen[i] = true
		}
	}
	for _, f := range out.Failed {
		i, ok := index(f.Id)
		if !ok {
			continue
		}
		seen[i] = true
		errs[i] = fmt.Errorf("entry failed: %s: %s (sender fault %t)", aws.ToString(f.Code), aws.ToString(f.Message), f.SenderFault)
		if !f.SenderFault {
			errs[i] = fmt.Errorf("%w: %w", ErrRetryable, errs[i])
		}
	}
	for i := range msgs {
		if !seen[i] {
			errs[i] = fmt.Errorf("%w: entry missing from the SendMessageBatch result", ErrRetryable)
		}
	}
	return errs, nil
}
