package devenv

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
	"github.com/triggers-dev/triggers/internal/dev/sqsesm"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/schema"
)

var sqsTest *mototest.Engine

// testSecretsKey stands for make dev's key on local-kms.
const testSecretsKey = "arn:aws:kms:us-east-1:111122223333:key/00000000-0000-0000-0000-000000000000"

func TestMain(m *testing.M) { os.Exit(mototest.Main(m, &sqsTest)) }

func devTemplate(t *testing.T) *sqsesm.Template {
	tpl, err := sqsesm.ReadTemplate(filepath.Join("..", "..", "..", "assertions", "testdata", "triggers-dev-api.json"))
	require.NoError(t, err)
	return tpl
}

// The dev API stack's consumer and webhook function, configured from the
// template on the local queues: only what deploys resolve and make dev's
// own choices are replaced.
func TestSetupFunctions(t *testing.T) {
	o := Options{EventsTable: "local-events", EventsProfile: schema.ProfileLean, WebhookSchedule: "1s,2s"}
	tpl := devTemplate(t)
	fns, err := setupFunctions(context.Background(), tpl, sqsTest.SQS, o, testSecretsKey)
	require.NoError(t, err)
	require.Len(t, fns.queues, 5)
	q := func(prefix string) sqsesm.LocalQueue {
		for id, lq := range fns.queues {
			if strings.HasPrefix(id, prefix) {
				return lq
			}
		}
		t.Fatalf("no queue %s*", prefix)
		return sqsesm.LocalQueue{}
	}
	require.NotNil(t, fns.consumer)
	assert.Equal(t, q("TriggersDeliveryQueue").URL, fns.consumer.QueueURL)
	assert.Equal(t, q("TriggersStreamFailures").URL, fns.consumer.DeadLetterQueueURL)

	require.NotNil(t, fns.webhooks)
	w := fns.webhooks
	assert.Equal(t, q("TriggersWebhooksRetryQueue").URL, w.QueueURL)
	assert.Equal(t, "local-events", w.EventsTable)
	assert.Equal(t, schema.ProfileLean, w.EventsProfile)
	want, _ := contract.ParseRetrySchedule("1s,2s")
	assert.Equal(t, want, w.Schedule)
	assert.Equal(t, webhook.DefaultTimeout, w.Timeout, "WEBHOOK_TIMEOUT from the template: the construct's default")
	assert.Equal(t, 120*time.Hour, w.DisableAfter, "WEBHOOK_DISABLE_AFTER from the template")
	assert.True(t, w.AllowPrivate)
	assert.Equal(t, testSecretsKey, w.SecretsKey, "WEBHOOK_SECRETS_KEY: the key on local-kms")
	assert.Empty(t, w.MetricsNamespace)
	assert.True(t, strings.HasPrefix(fns.webhooksFn, "TriggersWebhooksFunction"))
	require.Len(t, fns.mappings, 2)
	lines := fns.describe()
	require.Len(t, lines, 3)
	assert.Contains(t, lines[0], "batch 10, window 1s, partial batch responses, timeout 5m0s, webhook timeout 10s")
	assert.Regexp(t, `DeliveryQueue\w+ \(at most 20 at once, visibility 30m0s`, strings.Join(lines, "\n"), "the template's MaximumConcurrency per event source")
	assert.Regexp(t, `RetryQueue\w+ \(at most 10 at once, visibility 30m0s`, strings.Join(lines, "\n"))

	again, err := setupFunctions(context.Background(), tpl, sqsTest.SQS, o, testSecretsKey)
	require.NoError(t, err)
	assert.Equal(t, fns.queues, again.queues, "the queues are reused")
}

// A mapping that invokes another function than the webhook function is
// not run silently.
func TestSetupFunctionsRejectsOtherConsumers(t *testing.T) {
	tpl := devTemplate(t)
	m := tpl.Mappings[0]
	m.Function.Env = map[string]any{"SOMETHING": "else"}
	m.Function.LogicalID = "OtherFunction"
	tpl.Mappings[0] = m
	_, err := setupFunctions(context.Background(), tpl, sqsTest.SQS, Options{EventsTable: "e", WebhookSchedule: DefaultWebhookSchedule}, testSecretsKey)
	assert.ErrorContains(t, err, "invokes function OtherFunction, which is not the webhook function")
}

// The consumer's publisher sends to the queue as in Lambda and lists
// what it sent.
func TestQueuePublisher(t *testing.T) {
	url := sqsTest.CreateQueue(t, nil)
	var file strings.Builder
	sent := &deliveryLog{w: &file, log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	p := queuePublisher{queue: streamconsumer.SQSPublisher{Client: sqsTest.SQS, QueueURL: url}, sent: sent, log: sent.log}
	errs, err := p.Publish(context.Background(), []streamconsumer.Entry{
		{ID: "0", Message: streamconsumer.Message{Tenant: "acme", EventType: "a.b", EventID: "e1", Body: []byte(`{"event_id":"e1"}`)}},
		{ID: "1", Message: streamconsumer.Message{Tenant: "acme", EventType: "a.b", EventID: "e2", Body: []byte(`{"event_id":"e2"}`)}},
	})
	require.NoError(t, err)
	assert.Equal(t, []error{nil, nil}, errs)
	assert.Len(t, sent.kept, 2)
	assert.Contains(t, file.String(), `"event":{"event_id":"e2"}`)

	out, err := sqsTest.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 2, MessageAttributeNames: []string{"All"}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 2)
	for _, m := range out.Messages {
		var ev map[string]string
		require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &ev))
		assert.Contains(t, []string{"e1", "e2"}, ev["event_id"])
		assert.Equal(t, "acme", aws.ToString(m.MessageAttributes[streamconsumer.AttrTenant].StringValue))
	}

	// A queue that refuses the call: nothing listed.
	p.queue.QueueURL = url + "-missing"
	_, err = p.Publish(context.Background(), []streamconsumer.Entry{{ID: "0", Message: streamconsumer.Message{Tenant: "acme", EventID: "e3", Body: []byte(`{}`)}}})
	require.Error(t, err)
	assert.Len(t, sent.kept, 2)
}

// Options.WebhookEnv sets the webhook function's variables over the
// template's and make dev's own; Options.WebhookConcurrency replaces the
// mappings' MaximumConcurrency.
func TestSetupFunctionsOverrides(t *testing.T) {
	o := Options{EventsTable: "local-events", WebhookSchedule: "1s,2s", WebhookConcurrency: 12, WebhookEnv: map[string]string{
		"WEBHOOK_PARALLEL": "20", "WEBHOOK_TIMEOUT": "3s", "WEBHOOK_SLOW_AFTER": "1s", "WEBHOOK_SCHEDULE": "7s",
	}}
	fns, err := setupFunctions(context.Background(), devTemplate(t), sqsTest.SQS, o, testSecretsKey)
	require.NoError(t, err)
	w := fns.webhooks
	assert.Equal(t, 20, w.Parallel)
	assert.Equal(t, 3*time.Second, w.Timeout)
	assert.Equal(t, time.Second, w.SlowAfter)
	assert.Equal(t, time.Second, w.SlowLaneAfter, "the template's slow lane")
	assert.Equal(t, 4, w.TenantSlowConcurrency, "the template's slow lane")
	want, _ := contract.ParseRetrySchedule("7s")
	assert.Equal(t, want, w.Schedule, "WebhookEnv wins over make dev's schedule")
	assert.Equal(t, "local-events", w.EventsTable, "make dev's own values stay where WebhookEnv says nothing")
	require.Len(t, fns.mappings, 2)
	for _, m := range fns.mappings {
		assert.Equal(t, 12, m.Concurrency(), m.LogicalID)
	}
	lines := fns.describe()
	assert.Contains(t, lines[0], "timeout 5m0s, webhook timeout 3s")
	for _, l := range lines[1:] {
		assert.Contains(t, l, "(at most 12 at once,")
	}

	o.WebhookEnv = map[string]string{"WEBHOOK_PARALLEL": "0"}
	_, err = setupFunctions(context.Background(), devTemplate(t), sqsTest.SQS, o, testSecretsKey)
	assert.ErrorContains(t, err, "WEBHOOK_PARALLEL", "a bad value fails as it would in Lambda")
}
