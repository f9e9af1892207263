package devenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/dev/motolocal"
	"github.com/triggers-dev/triggers/internal/dev/sqsesm"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

// QueuePrefix starts the names of the queues make dev creates: the
// prefix, then the queue's logical id in the template.
const QueuePrefix = "triggers-"

// sqsEngine is the SQS engine Run serves from: one it started, or the one
// at Options.SQSEndpointURL.
type sqsEngine struct {
	client   *sqs.Client
	endpoint string
	pid      int             // 0 for an engine Run did not start
	done     <-chan struct{} // nil (never ready) for an engine Run did not start
	output   func() string
	stop     func() error
}

func startSQS(ctx context.Context, o Options) (*sqsEngine, error) {
	if o.SQSEndpointURL != "" {
		return &sqsEngine{client: motolocal.NewSQSClient(o.SQSEndpointURL), endpoint: o.SQSEndpointURL, stop: func() error { return nil }}, nil
	}
	port := o.SQSPort
	if port < 0 {
		port = 0
	}
	p, err := motolocal.Start(ctx, motolocal.Options{Port: port, Name: "the SQS engine"})
	switch {
	case errors.Is(err, motolocal.ErrPortInUse):
		return nil, fmt.Errorf("%w (-sqs-port; 0 picks a free port)", err)
	case errors.Is(err, motolocal.ErrNotInstalled):
		return nil, fmt.Errorf("%w, or point make dev at an SQS-compatible engine you run (-sqs-endpoint-url)", err)
	case err != nil:
		return nil, err
	}
	return &sqsEngine{client: p.SQSClient(), endpoint: p.Endpoint, pid: p.Pid(), done: p.Done(), output: p.Output, stop: p.Stop}, nil
}

// functions are the template's SQS side made local: its queues on the
// engine, and the stream consumer and webhook functions configured from
// their environment in the template, as in Lambda.
type functions struct {
	queues map[string]sqsesm.LocalQueue
	// consumer is the stream consumer's configuration; nil when the
	// template has none (the stream then feeds the local list only).
	consumer *fnconfig.Consumer
	// webhooks is the webhook function's configuration, and mappings its
	// enabled event source mappings; nil and empty when the template has
	// no webhook delivery.
	webhooks   *fnconfig.Webhooks
	webhooksFn string
	mappings   []sqsesm.Mapping
}

// setupFunctions creates the template's queues and configures the
// functions. Only what CloudFormation resolves at deploy time is replaced:
// the queue URLs and ARNs by the local queues', the events table by the
// local one; make dev also sets its retry schedule (seconds instead of
// hours), allows loopback targets (its receiver), seals webhook secrets
// with secretsKey (a key on local-kms) and turns the runtime metrics off.
// Every other variable (WEBHOOK_TIMEOUT, LOG_LEVEL,
// WEBHOOK_DISABLE_AFTER...) is the construct's, unless o.WebhookEnv sets
// it; o.WebhookConcurrency, when positive, replaces the mappings'
// MaximumConcurrency.
func setupFunctions(ctx context.Context, tpl *sqsesm.Template, client *sqs.Client, o Options, secretsKey string) (*functions, error) {
	queues, err := tpl.CreateQueues(ctx, client, QueuePrefix)
	if err != nil {
		return nil, err
	}
	out := &functions{queues: queues}

	var consumers []string
	for id, fn := range tpl.Functions {
		if _, ok := fn.Env[contract.EnvDeliveryQueueURL]; ok {
			consumers = append(consumers, id)
		}
	}
	sort.Strings(consumers)
	switch len(consumers) {
	case 0:
	case 1:
		getenv, err := tpl.Functions[consumers[0]].Environment(queues, map[string]string{contract.EnvSQSEndpoint: ""})
		if err != nil {
			return nil, err
		}
		c, err := fnconfig.LoadConsumer(getenv)
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", consumers[0], err)
		}
		out.consumer = &c
	default:
		return nil, fmt.Errorf("the template has several stream consumers (functions with %s: %s): make dev runs one", contract.EnvDeliveryQueueURL, strings.Join(consumers, ", "))
	}

	for _, m := range tpl.Mappings {
		if !m.Enabled {
			continue
		}
		if _, ok := m.Function.Env[contract.EnvWebhookSchedule]; !ok {
			return nil, fmt.Errorf("event source mapping %s invokes function %s, which is not the webhook function (no %s): make dev runs only the webhook function from SQS", m.LogicalID, m.Function.LogicalID, contract.EnvWebhookSchedule)
		}
		if out.webhooksFn != "" && out.webhooksFn != m.Function.LogicalID {
			return nil, fmt.Errorf("the template has two webhook functions (%s, %s): make dev runs one", out.webhooksFn, m.Function.LogicalID)
		}
		out.webhooksFn = m.Function.LogicalID
		if o.WebhookConcurrency > 0 {
			m.Settings.MaximumConcurrency = o.WebhookConcurrency
		}
		out.mappings = append(out.mappings, m)
	}
	if out.webhooksFn == "" {
		return out, nil
	}
	env := map[string]string{
		contract.EnvEventsTable:         o.EventsTable,
		contract.EnvEventsProfile:       string(o.EventsProfile),
		contract.EnvWebhookSchedule:     o.WebhookSchedule,
		contract.EnvWebhookAllowPrivate: "true",
		contract.EnvWebhookSecretsKey:   secretsKey,
		contract.EnvMetricsNamespace:    "",
		contract.EnvDynamoDBEndpoint:    "",
		contract.EnvSQSEndpoint:         "",
	}
	for k, v := range o.WebhookEnv {
		env[k] = v
	}
	getenv, err := tpl.Functions[out.webhooksFn].Environment(queues, env)
	if err != nil {
		return nil, err
	}
	w, err := fnconfig.LoadWebhooks(getenv)
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", out.webhooksFn, err)
	}
	out.webhooks = &w
	return out, nil
}

// describe returns the summary lines of the webhook function's mappings.
func (f *functions) describe() []string {
	if len(f.mappings) == 0 {
		return nil
	}
	m := f.mappings[0]
	s := m.Settings
	resp := "whole-batch responses"
	if s.ReportBatchItemFailures {
		resp = "partial batch responses"
	}
	lines := []string{fmt.Sprintf("%s through its event source mappings: batch %d, window %s, %s, timeout %s, webhook timeout %s",
		f.webhooksFn, s.BatchSize, s.MaximumBatchingWindow, resp, s.FunctionTimeout, f.webhooks.Timeout)}
	for _, m := range f.mappings {
		q := m.Queue
		line := fmt.Sprintf("<- %s (at most %d at once, visibility %s", f.queues[q.LogicalID].Name, m.Concurrency(), q.VisibilityTimeout)
		if q.Redrive != nil {
			line += ", " + strconv.Itoa(q.Redrive.MaxReceiveCount) + " receives -> " + f.queues[q.Redrive.DeadLetterQueue].Name
		}
		lines = append(lines, line+")")
	}
	return lines
}

// queuePublisher is the stream consumer's publisher in make dev: it sends
// to the delivery queue as in Lambda (streamconsumer.SQSPublisher) and adds
// every message sent to the local deliveries list.
type queuePublisher struct {
	queue streamconsumer.SQSPublisher
	sent  *deliveryLog
	log   *slog.Logger
}

// Publish implements streamconsumer.Publisher.
func (p queuePublisher) Publish(ctx context.Context, entries []streamconsumer.Entry) ([]error, error) {
	errs, err := p.queue.Publish(ctx, entries)
	if err != nil {
		return errs, err
	}
	for i, e := range entries {
		if i < len(errs) && errs[i] == nil {
			// Sent: a failure to list it must not send it again.
			if err := p.sent.deliver(ctx, e.Message); err != nil {
				p.log.ErrorContext(ctx, "deliveries list", "event_id", e.Message.EventID, "error", err.Error())
			}
		}
	}
	return errs, nil
}
