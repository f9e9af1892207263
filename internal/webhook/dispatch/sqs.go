package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/triggers-dev/triggers/internal/event"
)

// AttrKind is the message attribute that marks a retry-queue Task
// (value KindTask); delivery-queue messages (the stream consumer's) carry
// AttrTenant and the event as their body instead.
const (
	AttrKind   = "kind"
	KindTask   = "task"
	AttrTenant = "tenant"
)

// SQSAPI is the part of the SQS client SQSQueue uses.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SQSQueue is the retry queue on SQS.
type SQSQueue struct {
	Client SQSAPI
	URL    string
}

// Send implements Queue.
func (q SQSQueue) Send(ctx context.Context, t Task, delay time.Duration) error {
	body, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = q.Client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(q.URL),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: delaySeconds(delay),
		MessageAttributes: map[string]types.MessageAttributeValue{
			AttrKind: {DataType: aws.String("String"), StringValue: aws.String(KindTask)},
		},
	})
	if err != nil {
		return fmt.Errorf("send to the webhook retry queue: %w", err)
	}
	return nil
}

// delaySeconds is SQS's DelaySeconds for delay: whole seconds rounded up
// (a task never arrives before it is due, so it never hops for a fraction
// of a second), at most MaxQueueDelay.
func delaySeconds(delay time.Duration) int32 {
	delay = min(max(delay, 0), MaxQueueDelay)
	return int32((delay + time.Second - 1) / time.Second)
}

// AttemptLister reads an event's attempts; *store.Store implements it.
type AttemptLister interface {
	ListAttempts(ctx context.Context, tenant, eventID string) ([]event.Attempt, error)
}

// Redeliver queues redelivery round round of the tenant's event e (as read
// by the request, failed), due at: the API function's
// httpapi.Webhooks.Redeliver. It reads the event's attempts from st first,
// so that the round's task names the attempt it makes to each
// subscription (Task.Numbers): an attempt put off (scheduled) is resumed
// by the round, not doubled. The round starts when the request or the
// task moves the event to retrying (store StartRedelivery), whichever
// comes first.
func Redeliver(q Queue, st AttemptLister) func(ctx context.Context, tenant string, e event.Event, round string, at time.Time) error {
	return func(ctx context.Context, tenant string, e event.Event, round string, at time.Time) error {
		attempts, err := st.ListAttempts(ctx, tenant, e.ID)
		if err != nil {
			return err
		}
		return q.Send(ctx, Task{Tenant: tenant, EventID: e.ID, Round: round, RetryCount: e.RetryCount, Numbers: RoundNumbers(attempts), DueAt: at}, 0)
	}
}

// Recover queues recovery id of the tenant's subscription subscriptionID
// over the events of [since, until), asked for at at: the API function's
// httpapi.Webhooks.Recover. Its first page reads the whole range;
// each page queues the next.
func Recover(q Queue) func(ctx context.Context, tenant, subscriptionID, id string, since, until, at time.Time) error {
	return func(ctx context.Context, tenant, subscriptionID, id string, since, until, at time.Time) error {
		r := &Recovery{ID: id, From: event.IDFloor(since), To: event.IDFloor(until)}
		return q.Send(ctx, Task{Tenant: tenant, SubscriptionID: subscriptionID, Recover: r, DueAt: at}, 0)
	}
}

// Concurrency bounds the messages of one SQS batch handled at once: the
// largest batch an SQS event source hands over by default (10), so every
// message starts at once and one tenant's slow endpoints never hold up
// another tenant's message in the same batch. Each message bounds its own
// attempts (Config.Parallel).
const Concurrency = 10

// HandleSQS is the webhook function's handler: one batch from the
// delivery queue or the retry queue. Failed messages are reported as
// batch item failures (the event source mapping needs
// ReportBatchItemFailures), so SQS retries them alone. A message that can
// never be handled (not a delivery message or a Task) fails with the
// batch too: after the queue's maximum receives it goes to its
// dead-letter queue with its content, where an operator can read it.
func (d *Dispatcher) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var (
		mu       sync.Mutex
		failures []events.SQSBatchItemFailure
		wg       sync.WaitGroup
		sem      = make(chan struct{}, Concurrency)
	)
	for _, m := range ev.Records {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := d.handleMessage(ctx, m); err != nil {
				level := slog.LevelError
				if errors.Is(err, errInProgress) || errors.Is(err, errNoTime) {
					level = slog.LevelWarn
				}
				d.cfg.Logger.Log(ctx, level, "webhook message failed: it is handled again after the visibility timeout", "message_id", m.MessageId, "error", err.Error())
				mu.Lock()
				failures = append(failures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return events.SQSEventResponse{BatchItemFailures: failures}, nil
}

func (d *Dispatcher) handleMessage(ctx context.Context, m events.SQSMessage) error {
	if a, ok := m.MessageAttributes[AttrKind]; ok && a.StringValue != nil && *a.StringValue == KindTask {
		var t Task
		if err := json.Unmarshal([]byte(m.Body), &t); err != nil || t.Tenant == "" || (t.EventID == "" && (t.Wake == "" && t.Recover == nil || t.SubscriptionID == "")) || t.Recover != nil && t.Recover.ID == "" {
			return fmt.Errorf("malformed task %q", truncate(m.Body, 200))
		}
		return d.HandleTask(ctx, t)
	}
	tenant := ""
	if a, ok := m.MessageAttributes[AttrTenant]; ok && a.StringValue != nil {
		tenant = *a.StringValue
	}
	var body struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal([]byte(m.Body), &body); err != nil || tenant == "" || body.EventID == "" {
		return errors.New("malformed delivery message: want the tenant attribute and an event body with event_id")
	}
	return d.HandleEvent(ctx, tenant, body.EventID)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
