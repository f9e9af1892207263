package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
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
	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

// archivePutter writes archive objects; *s3.Client implements it.
type archivePutter = archive.Putter

// failureQueue is the part of the SQS client that drains the archive's
// failure queue (-from-queue); *sqs.Client implements it.
type failureQueue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	// SendMessage parks the records of a range that can never be
	// archived.
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// archiveChunk is how many TTL deletions of a range one archiver call
// takes: a range is cut into chunks by count, in stream order, so the
// same range always gives the same objects (their keys derive from the
// sequence numbers they hold).
const archiveChunk = 1000

// DefaultHold is how long, in seconds, a message the drain received stays
// hidden from other readers (-hold): the receive asks for it, and while
// the run goes on it renews it every third of it (renewHeld), so however
// long the run, it does not meet the messages it leaves on the queue (a
// parked record; every message of a dry run) again and ends at the first
// empty receive. A run that stops makes them visible again (release); one
// that cannot (killed with SIGKILL, its machine lost, SQS unreachable at
// the end) leaves none hidden longer than this. (Hidden for 12 hours, as
// they once were, the messages of a killed dry run were out of the next
// run's sight, and of the ArchiveFailuresNotEmpty alarm's, until their
// ranges had left the stream.)
const DefaultHold = 120

// MinHold and MaxHold bound -hold. A renewal a third of the hold after
// the receive asks for the hold again, and SQS hides a message at most 12
// hours after its receive: 9 hours at most. Below 10 s a slow link
// renews too late.
const (
	MinHold = 10
	MaxHold = 9 * 60 * 60
)

// finishTimeout bounds what a stopped run still does for the range it
// was finishing (parking its records, deleting its message), so that the
// next run does not do it again.
const finishTimeout = 30 * time.Second

// renewCalls is how many renewal calls (ten messages each) go at once.
const renewCalls = 4

// maxBack ends a drain whose receives bring only messages it has seen
// this many times in a row: they keep coming back (their renewals fail),
// and could crowd out unseen ones; the run says so and exits 1.
const maxBack = 5

// holder keeps the messages a drain received and has not deleted hidden
// while it runs, and makes them visible again at its end.
type holder struct {
	q    failureQueue
	url  string
	hold int32
	log  *slog.Logger
	mu   sync.Mutex
	held map[string]string // message id -> receipt handle
}

// add holds msg (again, with its new receipt handle when it came back).
func (h *holder) add(msg sqstypes.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held[aws.ToString(msg.MessageId)] = aws.ToString(msg.ReceiptHandle)
}

// drop forgets a deleted message.
func (h *holder) drop(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, id)
}

// handles returns the held messages' receipt handles by message id.
func (h *holder) handles() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.held)
}

// renewHeld hides every held message for hold seconds more, every every,
// until ctx ends, ten messages a call. A renewal SQS refuses (a message
// received more than 12 hours ago; a receipt handle a later receive
// replaced; throttling) is logged: the message comes back, the drain
// receives it again and holds it anew, counting it once.
func (h *holder) renewHeld(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		handles := h.handles()
		began := time.Now()
		failed, err := h.changeAll(ctx, handles, h.hold)
		if took := time.Since(began); took > every && ctx.Err() == nil {
			h.log.Warn("renewing the held messages took longer than the renewal interval: some may come back before the run ends; give a longer -hold", "messages", len(handles), "took", took.String(), "every", every.String())
		}
		now := h.handles()
		stillHeld := 0
		for _, id := range failed {
			if now[id] == handles[id] {
				stillHeld++
			}
		}
		if stillHeld > 0 && ctx.Err() == nil {
			h.log.Warn("could not keep received messages hidden: they may come back before the run ends (each is then held again and counted once)", "messages", stillHeld, "error", fmt.Sprint(err))
		}
	}
}

// release makes every held message visible again and returns how many
// SQS did not take back (they come back by themselves within the hold)
// and the first error. It gives up after the hold: by then they are back
// anyway.
func (h *holder) release(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(h.hold)*time.Second)
	defer cancel()
	failed, err := h.changeAll(ctx, h.handles(), 0)
	return len(failed), err
}

// gone are the batch error codes of a message no longer held under the
// receipt handle given: back on the queue by itself (its visibility
// ended), or received again (a new receipt handle). SQS has also been
// seen to answer an expired handle with InvalidParameterValue ("The
// receipt handle has expired"); with a visibility of 0, which is always
// valid, that code can mean nothing else.
var gone = map[string]bool{"MessageNotInflight": true, "ReceiptHandleIsInvalid": true, "AWS.SimpleQueueService.MessageNotInflight": true, "InvalidParameterValue": true}

// changeAll sets the visibility of the messages handles (message id ->
// receipt handle) to vis seconds, ten per ChangeMessageVisibilityBatch
// call, renewCalls calls at once, and returns the ids SQS did not take,
// with the first error. With vis 0 (making them visible) a message no
// longer held under its handle (gone) counts as taken: it is visible
// already, or someone else's.
func (h *holder) changeAll(ctx context.Context, handles map[string]string, vis int32) ([]string, error) {
	ids := slices.Sorted(maps.Keys(handles))
	var (
		mu     sync.Mutex
		failed []string
		first  error
		wg     sync.WaitGroup
	)
	fail := func(ids []string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, ids...)
		if first == nil {
			first = err
		}
	}
	calls := make(chan struct{}, renewCalls)
	for start := 0; start < len(ids); start += 10 {
		batch := ids[start:min(start+10, len(ids))]
		calls <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-calls; wg.Done() }()
			entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(batch))
			for i, id := range batch {
				entries[i] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(handles[id]), VisibilityTimeout: vis}
			}
			out, err := h.q.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(h.url), Entries: entries})
			if err != nil {
				fail(batch, err)
				return
			}
			for _, f := range out.Failed {
				i, err := strconv.Atoi(aws.ToString(f.Id))
				if err != nil || i < 0 || i >= len(batch) {
					continue
				}
				if vis == 0 && gone[aws.ToString(f.Code)] {
					continue
				}
				fail(batch[i:i+1], fmt.Errorf("message %s: %s: %s", batch[i], aws.ToString(f.Code), aws.ToString(f.Message)))
			}
		}()
	}
	wg.Wait()
	return failed, first
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
	// hold is how long, in seconds, a received message stays hidden
	// unless renewed (0: DefaultHold); renewEvery renews the held ones
	// (0: a third of hold).
	hold       int32
	renewEvery time.Duration
	// notReplayed counts the failure records whose replay failed or
	// that are not failure records at all: each is logged with its
	// error, left on the queue, and the run goes on with the others.
	notReplayed int
	// function is the archiver function whose failure records the run
	// replays (-function: a name or an ARN); "" takes the function of the
	// first failure record met. Records of another function (a failure
	// queue shared with another stream consumer) are left on the queue.
	function string
	// foreign counts the failure records of another function (notReplayed
	// counts them too).
	foreign int
	// park takes the records of a replayed range that can never be
	// archived, with their content (the drain's queue, as the archiver
	// parks them); nil: they are logged only (standard input, dry run).
	park streamconsumer.DeadLetter
	// parkedNow counts the records this run parked.
	parkedNow int
	// inFlightAtStart is the queue's ApproximateNumberOfMessagesNotVisible
	// before the drain's first receive: messages another reader holds
	// (a run still going, or one that stopped without making them
	// visible), which this run cannot see.
	inFlightAtStart int
	// inFlightUnknown is set when the queue's count of messages in flight
	// could not be read.
	inFlightUnknown bool
	// cutShort is set when the drain ended because held messages kept
	// coming back (maxBack).
	cutShort bool
	// unreleased counts the messages the drain could not make visible
	// again at its end (they come back by themselves within the hold).
	unreleased int
}

// runAttribute is the message attribute that names the drain which
// parked a record on the queue it drains (sentTo).
const runAttribute = "triggers_replay_run"

// runAttributeBytes bounds what runAttribute takes of a message's size
// (its name, its type and the run's token, rand.Text's 26 characters):
// streamconsumer.SQSDeadLetter.AttributeBytes.
const runAttributeBytes = 64

// sentTo is a queue whose SendMessage marks each message it sends with
// run in runAttribute: the records a drain parks on the queue it drains,
// which it then meets and must not count again. A mark, not the message
// ids SendMessage answers: when that answer is lost the SDK sends the
// message again, and the first copy's id is never known (both copies are
// counted as archiver-parked otherwise; found by review).
type sentTo struct {
	failureQueue
	run string
}

// SendMessage implements streamconsumer.DeadLetterSender.
func (q sentTo) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	marked := *in
	marked.MessageAttributes = maps.Clone(in.MessageAttributes)
	if marked.MessageAttributes == nil {
		marked.MessageAttributes = map[string]sqstypes.MessageAttributeValue{}
	}
	marked.MessageAttributes[runAttribute] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(q.run)}
	return q.failureQueue.SendMessage(ctx, &marked, optFns...)
}

// parkedBy reports whether msg was parked by the drain run (sentTo).
func parkedBy(msg sqstypes.Message, run string) bool {
	v, ok := msg.MessageAttributes[runAttribute]
	return ok && aws.ToString(v.StringValue) == run
}

func runArchive(ctx context.Context, c clients, cfg aws.Config, d *deps, args []string, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger, dryRun bool, sqsClient func() *sqs.Client) int {
	fs := flag.NewFlagSet("archive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bucket := fs.String("bucket", "", "the archive bucket's name (output ArchiveBucketName of the data stack, or of the API stack when it archives an imported events table; required unless -dry-run)")
	prefix := fs.String("prefix", contract.DefaultArchivePrefix, "the archive's key prefix (ExpiredEventsArchiveProps.Prefix)")
	s3Endpoint := fs.String("s3-endpoint-url", "", "S3 endpoint (an S3-compatible local server, say)")
	fromQueue := fs.String("from-queue", "", "drain this queue (the archive's failure queue) instead of reading failure records on standard input: each message replayed is deleted")
	function := fs.String("function", "", "the archiver function (output ArchiverFunctionName, or its ARN): failure records of another function are left on the queue; required by -from-queue unless -dry-run (a queue shared with another consumer would lose that consumer's records); otherwise, default: the function of the first failure record")
	hold := fs.Int("hold", DefaultHold, fmt.Sprintf("seconds a message -from-queue received stays hidden from other readers if the run dies without making it visible again (renewed every third of it while the run goes on), %d to %d", MinHold, MaxHold))
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case *fromQueue != "" && !dryRun && *function == "":
		fmt.Fprintf(stderr, "triggers-replay: archive -from-queue deletes every range it replays: it needs -function, the archiver's name (output ArchiverFunctionName of the stack with the archive), so that it leaves the records of another consumer sharing the queue alone\n%s\n", usage)
		return 2
	case *hold < MinHold || *hold > MaxHold:
		fmt.Fprintf(stderr, "triggers-replay: -hold %d must be %d to %d seconds (renewed a third of the way, a hold must fit in the 12 hours SQS hides a message for)\n", *hold, MinHold, MaxHold)
		return 2
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
	r := &archiveReplayer{c: c, a: a, log: log, function: *function, hold: int32(*hold)}
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
		r.summary(stderr)
		return 1
	}
	fmt.Fprintf(stderr, "triggers-replay: %d events %s from %d ranges\n", r.archived, verb, r.ranges)
	return r.summary(stderr)
}

// summary reports on w what the run left for a person, and returns the
// exit status it makes: 0, exitLost, or 1.
func (r *archiveReplayer) summary(stderr io.Writer) int {
	code := 0
	if r.parked > 0 {
		fmt.Fprintf(stderr, "triggers-replay: %d messages are records the archiver parked because they can never be archived (the reason and the record are in each message): they are left on the queue for you; docs/runbook.md, \"Archive failures not empty\"\n", r.parked)
		code = 1
	}
	switch {
	case r.parkedNow > 0:
		fmt.Fprintf(stderr, "triggers-replay: %d records of the ranges can never be archived: parked on the queue with their content, as the archiver parks them (logged above too)\n", r.parkedNow)
		code = 1
	case r.unarchivable > 0:
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
	if r.foreign > 0 {
		fmt.Fprintf(stderr, "triggers-replay: %d of them are failure records of another function than %s: the failure queue is shared with another stream consumer, whose ranges this command must not archive or delete; replay each consumer's records with its own command, and give the archive a queue of its own\n", r.foreign, r.function)
	}
	if r.queueSummary(stderr) {
		code = 1
	}
	return code
}

// queueSummary reports on w what a drain could not see or give back, and
// whether there was any: the run then exits 1.
func (r *archiveReplayer) queueSummary(w io.Writer) bool {
	bad := false
	if r.cutShort {
		fmt.Fprintf(w, "triggers-replay: the run ended early: messages it held kept coming back (their renewals failed, logged above), and could hide messages it had not seen: run again, with a longer -hold\n")
		bad = true
	}
	if r.inFlightUnknown {
		fmt.Fprintf(w, "triggers-replay: the queue's count of messages in flight could not be read (logged above; allow sqs:GetQueueAttributes): messages another reader held when the run began, if any, were not seen\n")
		bad = true
	}
	if r.inFlightAtStart > 0 {
		fmt.Fprintf(w, "triggers-replay: %d messages of the queue were in flight when the run began (another reader held them: a run still going, or one that stopped without making them visible again; SQS's count may also lag a minute behind a run that just ended), and this run could not see them: run again once the queue's ApproximateNumberOfMessagesNotVisible is 0 (within -hold, %d s by default, of a run of this command that stopped; up to 12 h for one of a release before the hold)\n", r.inFlightAtStart, DefaultHold)
		bad = true
	}
	if r.unreleased > 0 {
		fmt.Fprintf(w, "triggers-replay: %d messages could not be made visible again (logged above): they stay hidden from the next run until their hold ends (-hold, %d s): wait that long before it\n", r.unreleased, r.hold)
		bad = true
	}
	return bad
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
		if r.isForeign(m, "input", i+1) {
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
// once replayed; parked records, messages that are no failure records,
// failure records of another function and ranges whose replay failed
// (each logged with its error) are left there, visible again at the end,
// and the run goes on with the other messages: one range past the
// stream's 24 h does not keep the others, on the same clock, from being
// archived. It stops at the first receive (a long poll) that brings no
// message, or after maxBack in a row that bring only messages it has seen
// (cutShort). In a dry run nothing is deleted and every message is made
// visible again at the end. The records of a replayed range that can
// never be archived are parked on the queue (not in a dry run), and not
// counted again when the run meets them there.
//
// Every message received and not deleted is held (holder): hidden for the
// hold, renewed while the run goes on, made visible again when the run
// ends, whether it ends well, on an error or interrupted (SIGINT,
// SIGTERM, SIGHUP); a run that dies without that (SIGKILL) leaves them
// hidden for the rest of the hold only. Messages another reader held when
// the run began (inFlightAtStart) are reported: this run could not see
// them.
func (r *archiveReplayer) drain(ctx context.Context, q failureQueue, url string, dryRun bool) error {
	hold := r.hold
	if hold <= 0 {
		hold = DefaultHold
	}
	every := r.renewEvery
	if every <= 0 {
		every = time.Duration(hold) * time.Second / 3
	}
	r.countInFlight(ctx, q, url)
	run := rand.Text() // marks the records this run parks (sentTo)
	if !dryRun {
		r.park = streamconsumer.SQSDeadLetter{Client: sentTo{q, run}, QueueURL: url, AttributeBytes: runAttributeBytes}
	}
	h := &holder{q: q, url: url, hold: hold, log: r.log, held: map[string]string{}}
	rctx, stopRenewing := context.WithCancel(ctx)
	renewing := make(chan struct{})
	go func() {
		defer close(renewing)
		h.renewHeld(rctx, every)
	}()
	defer func() {
		stopRenewing()
		<-renewing
		n, err := h.release(context.WithoutCancel(ctx))
		if n > 0 {
			r.unreleased = n
			r.log.Error("could not make messages visible again: they stay hidden until their hold ends", "messages", n, "hold_seconds", hold, "error", fmt.Sprint(err))
		}
	}()
	seen := map[string]bool{}
	back := 0 // receives in a row that brought only messages seen before
	for {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 2, VisibilityTimeout: hold,
			MessageAttributeNames: []string{runAttribute},
		})
		if err != nil {
			return fmt.Errorf("receive from %s: %w", url, err)
		}
		for _, msg := range out.Messages {
			h.add(msg)
		}
		fresh := 0
		for _, msg := range out.Messages {
			id := aws.ToString(msg.MessageId)
			if seen[id] {
				continue // back although held (a renewal failed): held again, counted once
			}
			seen[id] = true
			fresh++
			if parkedBy(msg, run) {
				continue // a record this run parked: counted as parked already
			}
			m, err := parseFailure(json.RawMessage(aws.ToString(msg.Body)))
			if err != nil {
				r.notReplayed++
				r.log.Error("message is no failure record: left on the queue", "message_id", id, "error", err.Error(), "body", aws.ToString(msg.Body))
				continue
			}
			if m.Info == nil {
				r.parked++
				r.log.Warn("parked record: it can never be archived; left on the queue", "message_id", id, "reason", m.Reason, "record", m.Record)
				continue
			}
			if r.isForeign(m, "message_id", id) {
				continue
			}
			if err := r.replay(ctx, *m.Info); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("message %s (left on the queue): %w", id, err)
				}
				r.notReplayed++
				r.log.Error("range not replayed: left on the queue", "message_id", id, "shard_id", m.Info.ShardID,
					"start_sequence_number", m.Info.StartSequenceNumber, "end_sequence_number", m.Info.EndSequenceNumber, "error", err.Error())
				continue
			}
			if dryRun {
				continue
			}
			// Replayed (and its unarchivable records parked): deleted even
			// when the run is being stopped, so that the next run does
			// not park them again.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
			_, err = q.DeleteMessage(dctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: msg.ReceiptHandle})
			cancel()
			if err != nil {
				return fmt.Errorf("delete message %s (replayed; a next run replays it again, harmlessly, and parks its unarchivable records again): %w", id, err)
			}
			h.drop(id)
		}
		// Only an empty receive ends the run: messages that came back
		// (a renewal SQS refused) are held again above, so they do not
		// come back at once, and cannot be taken for the end of the
		// queue while unseen ones wait.
		if len(out.Messages) == 0 {
			return nil
		}
		if back = back + 1; fresh > 0 {
			back = 0
		}
		if back >= maxBack {
			// The renewals keep failing (logged above): held messages
			// keep coming back, and could hide unseen ones.
			r.cutShort = true
			r.log.Error("held messages keep coming back (their renewals fail): the run ends here; messages it has not seen may be left", "receives", back)
			return nil
		}
	}
}

// countInFlight reads the queue's ApproximateNumberOfMessagesNotVisible
// into inFlightAtStart, and warns when there are some; a queue whose
// attributes cannot be read (no sqs:GetQueueAttributes) is warned about
// and drained all the same.
func (r *archiveReplayer) countInFlight(ctx context.Context, q failureQueue, url string) {
	out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		r.inFlightUnknown = true
		r.log.Error("could not read the queue's count of messages in flight (sqs:GetQueueAttributes): if another run holds messages, this run does not see them", "error", err.Error())
		return
	}
	n, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	if err != nil || n <= 0 {
		return
	}
	r.inFlightAtStart = n
	r.log.Warn("messages of the queue are in flight: another reader holds them (a run still going, or one that stopped without making them visible again), and this run cannot see them", "messages_in_flight", n)
}

// isForeign reports whether m is the failure record of another function
// than the one the run replays (r.function, or the first one met), and
// then logs and counts it; attrs name the message.
func (r *archiveReplayer) isForeign(m failureMessage, attrs ...any) bool {
	fn := m.Context.FunctionArn
	if fn == "" {
		return false
	}
	if r.function == "" {
		r.function = fn
		return false
	}
	if sameFunction(r.function, fn) {
		return false
	}
	r.foreign++
	r.notReplayed++
	r.log.Error("failure record of another function: left on the queue (is the failure queue shared with another stream consumer? pass -function with the archiver's name, output ArchiverFunctionName)",
		append(attrs, "function_arn", fn, "replaying_for", r.function)...)
	return true
}

// sameFunction reports whether the function a (a name, a full ARN, a
// qualified ARN) is the one of the ARN arn: Lambda names a failure
// record's function by its ARN, qualified when the mapping invokes an
// alias or a version.
func sameFunction(a, arn string) bool {
	if a == arn {
		return true
	}
	fa, fb := functionOf(a), functionOf(arn)
	same := func(x, y string) bool { return x == "" || y == "" || x == y }
	return fa.name == fb.name && same(fa.account, fb.account) && same(fa.region, fb.region)
}

// lambdaFunction is what a Lambda function ARN or name says of the function:
// "" where it says nothing.
type lambdaFunction struct{ region, account, name string }

// functionOf reads a Lambda function ARN
// (arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]), a partial
// one (ACCOUNT:function:NAME[:QUALIFIER], function:NAME), or
// NAME[:QUALIFIER]. The qualifier is dropped: a version or alias runs
// the same function's code. The account and region, where both sides
// give them, are compared by sameFunction; a bare name matches the
// function of that name in any (one failure queue takes the records of
// one region's functions, and rarely of another account's).
func functionOf(s string) lambdaFunction {
	parts := strings.Split(s, ":")
	i := slices.Index(parts, "function")
	switch {
	case i < 0 || i+1 >= len(parts):
		return lambdaFunction{name: parts[0]}
	case i == 5 && parts[0] == "arn":
		return lambdaFunction{region: parts[3], account: parts[4], name: parts[i+1]}
	case i == 1:
		return lambdaFunction{account: parts[0], name: parts[i+1]}
	}
	return lambdaFunction{name: parts[i+1]}
}

// replay re-reads the range of in from the stream and archives its TTL
// deletions with the archiver's own code, in chunks of archiveChunk.
// Records that can never be archived are logged with their content and
// counted, not written. A part of the range that had aged out of the
// stream is logged as lost and counted (lostRanges); the rest is archived
// and the replay succeeds: nothing more can be read for that range.
func (r *archiveReplayer) replay(ctx context.Context, in streampoll.BatchInfo) error {
	var ttl []events.DynamoDBEventRecord
	type malformed struct {
		raw json.RawMessage
		err error
	}
	var bad []malformed
	read := 0
	lost, err := readRange(ctx, r.c, in, func(batch []events.DynamoDBEventRecord) error {
		read += len(batch)
		for _, rec := range batch {
			_, ok, err := archive.Convert(rec)
			if err != nil {
				raw, merr := streamconsumer.MarshalRecord(rec)
				if merr != nil {
					raw, _ = json.Marshal(rec)
				}
				bad = append(bad, malformed{raw, err})
				r.log.Error("stream record can never be archived", "sequence_number", rec.Change.SequenceNumber, "error", err.Error(), "record", raw)
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
	// The range's message is deleted once replayed: it is the only
	// description of these records, so they are parked first, with
	// their content, as the archiver parks them (after the objects, so
	// that a range that fails to write is not parked again by the next
	// run).
	for _, b := range bad {
		if r.park != nil {
			// Parked even when the run is being stopped: a range
			// stopped halfway parks its first records again next time.
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
			err := r.park.Park(pctx, b.raw, b.err.Error())
			cancel()
			if err != nil {
				return fmt.Errorf("park a record that can never be archived (%v): %w", b.err, err)
			}
			r.parkedNow++
		}
		r.unarchivable++
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
