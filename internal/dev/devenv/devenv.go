// Package devenv runs the whole Triggers path on one machine, with the same
// code as on AWS: DynamoDB Local (internal/ddb/ddblocal), the tables from the
// schema the constructs use, a demo tenant's API key, the HTTP API as
// deployed (internal/dev/localapi: an API Gateway emulator built from the
// synthesized API stack template, calling the real authorizer and API
// handlers through their Lambda entry points), a stream poller that runs
// the stream consumer (internal/streamconsumer) against DynamoDB Local's Streams
// API, and webhook push delivery on a real SQS engine (moto_server,
// internal/dev/motolocal): the template's delivery and retry queues and
// their dead-letter queues, the consumer sending to the delivery queue,
// and the webhook function invoked through its Lambda entry point by its
// event source mappings (internal/dev/sqsesm), all configured from the
// template.
// Webhook signing secrets are sealed and opened with local-kms
// (internal/dev/kmslocal), a KMS-compatible engine, as the deployed
// functions do with KMS.
//
// cmd/triggers-dev (`make dev`) is its command-line front end.
package devenv

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbconfig"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/dev/kmslocal"
	"github.com/triggers-dev/triggers/internal/dev/localapi"
	"github.com/triggers-dev/triggers/internal/dev/sqsesm"
	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
	"github.com/triggers-dev/triggers/schema"
)

// Defaults of Options.
const (
	DefaultAddr         = "127.0.0.1:8080"
	DefaultDynamoDBPort = 8000
	DefaultTenant       = "demo"
	DefaultEventsTable  = "triggers-events"
	DefaultKeysTable    = "triggers-apikeys"
	// DeliveriesPath serves the local sink's deliveries next to the API.
	DeliveriesPath = "/_dev/deliveries"
	// maxKept bounds the deliveries kept in memory for DeliveriesPath.
	maxKept = 1000
)

// Options configure Run. Zero values take the defaults.
type Options struct {
	// Addr is the API's listen address. Default: DefaultAddr (loopback).
	Addr string
	// Template is the synthesized API stack the gateway is built from.
	// Default: localapi.DefaultTemplate under the module root (make dev
	// synthesizes it when the constructs or stacks changed).
	Template string
	// DynamoDBPort is DynamoDB Local's port; -1 picks a free one.
	// Default: DefaultDynamoDBPort.
	DynamoDBPort int
	// DataDir keeps DynamoDB Local's data across runs, and local-kms's
	// keys in DataDir/kms (the key that sealed the stored webhook
	// secrets). Default: in memory, and a temporary folder for the keys.
	// The queues are always in memory.
	DataDir string
	// EndpointURL, when set, uses the DynamoDB engine already serving
	// there (a DynamoDB Local you run, or real tables with
	// https://dynamodb.<region>.amazonaws.com) instead of starting one;
	// DynamoDBPort, DataDir, Jar and Java are then unused. Credentials come
	// from the AWS default chain, or static dummy ones when the
	// environment has none (ddbconfig.LoadConfig). Its tables are created when
	// missing and kept at exit.
	EndpointURL string
	// Tenant is the demo tenant that gets a new API key at every start.
	// Default: DefaultTenant.
	Tenant string
	// EventsTable and KeysTable name the tables. Default:
	// DefaultEventsTable, DefaultKeysTable.
	EventsTable, KeysTable string
	// EventsProfile is the events table's profile (schema.EventsFor),
	// which the local API and the webhook dispatcher follow. A table kept
	// from an earlier run (DataDir, EndpointURL) keeps the profile it was
	// made with. Default: schema.ProfileSeed.
	EventsProfile schema.EventsProfile
	// Shards is the demo tenant's write shard count (1..shard.MaxShards,
	// docs/sharding.md); more than one turns sharding on for the events
	// table. Default: 1 (unsharded).
	Shards int
	// DeliveriesFile, when set, gets every delivery appended as a JSON line.
	DeliveriesFile string
	// Jar and Java locate DynamoDB Local and Java. Default: ddblocal's.
	Jar, Java string
	// SQSPort is the SQS engine's loopback port. Default (0 or -1): a
	// free port.
	SQSPort int
	// SQSEndpointURL, when set, uses the SQS-compatible engine already
	// serving there instead of starting one (SQSPort is then unused); the
	// template's queues are created there when missing (QueuePrefix +
	// logical id) and kept at exit.
	SQSEndpointURL string
	// PollInterval is the stream poller's pause when the stream has
	// nothing new. Default: 250 ms.
	PollInterval time.Duration
	// WebhookSchedule is the webhook retry schedule (contract.ParseRetrySchedule
	// syntax), replacing the template's WEBHOOK_SCHEDULE. Default:
	// DefaultWebhookSchedule, seconds instead of the deployed hours.
	WebhookSchedule string
	// WebhookEnv sets variables of the webhook function's environment
	// (WEBHOOK_TIMEOUT, WEBHOOK_PARALLEL, WEBHOOK_SLOW_AFTER...) over the
	// template's and make dev's own values, as a deployment's construct
	// props would. Default: none.
	WebhookEnv map[string]string
	// WebhookConcurrency, when positive, is the MaximumConcurrency of
	// every webhook event source mapping, replacing the template's (whose
	// absence means the function's reserved concurrency, else
	// sqsesm.DefaultConcurrency). Default: the template's.
	WebhookConcurrency int
	// WebhookRoots are certificates the webhook function's HTTP client
	// trusts besides the system roots and the local receiver's: other
	// https receivers on loopback. Default: none.
	WebhookRoots []*x509.Certificate
	// WebhookMetrics receives the webhook function's metrics (attempts by
	// outcome, deferred attempts, circuits opened, disabled
	// subscriptions), as the deployed function's EMF writer does.
	// Default: none (make dev turns the runtime metrics off).
	WebhookMetrics dispatch.Metrics
	// Stdout receives the start-up summary (with the API key) and the
	// request, delivery and poller log lines (JSON). Default: os.Stdout.
	Stdout io.Writer
	// Ready, when set, receives the environment once it serves.
	Ready chan<- Info
}

// Info describes a running environment.
type Info struct {
	// URL is the API's base URL: the stage's, as in the deployed ApiUrl
	// output without its trailing slash (http://127.0.0.1:8080/live).
	URL string
	// DeliveriesURL lists the local sink's deliveries.
	DeliveriesURL string
	// WebhooksURL lists what the local webhook receiver got; ReceiverURL
	// is the receiver's base URL (https on loopback) for subscriptions:
	// ReceiverURL + "/ok", "/fail", "/flaky" or "/gone".
	WebhooksURL, ReceiverURL string
	// Template is the path of the template the gateway serves, and
	// Stage its stage.
	Template, Stage string
	// DynamoDBEndpoint is DynamoDB Local's URL.
	DynamoDBEndpoint string
	// DynamoDBPid is DynamoDB Local's process id.
	DynamoDBPid int
	// SQSEndpoint is the SQS engine's URL, and SQSPid its process id (0
	// for an engine Run did not start).
	SQSEndpoint string
	SQSPid      int
	// Queues are the template's queues on the SQS engine, by logical id.
	Queues map[string]sqsesm.LocalQueue
	// KMSEndpoint and KMSPid are local-kms's URL and process id;
	// SecretsKey is the ARN of its key that seals webhook secrets.
	KMSEndpoint string
	KMSPid      int
	SecretsKey  string
	// Tenant and APIKey are the demo tenant and its new key.
	Tenant, APIKey string
	// EventsTable and KeysTable are the tables' names.
	EventsTable, KeysTable string
}

func (o *Options) defaults() {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.WebhookSchedule == "" {
		o.WebhookSchedule = DefaultWebhookSchedule
	}
	if o.DynamoDBPort == 0 {
		o.DynamoDBPort = DefaultDynamoDBPort
	}
	if o.Tenant == "" {
		o.Tenant = DefaultTenant
	}
	if o.EventsTable == "" {
		o.EventsTable = DefaultEventsTable
	}

	if o.KeysTable == "" {
		o.KeysTable = DefaultKeysTable
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 250 * time.Millisecond
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Template == "" {
		o.Template = localapi.DefaultTemplate
		if root, err := ddblocal.ModuleRoot(); err == nil {
			o.Template = filepath.Join(root, localapi.DefaultTemplate)
		}
	}
}

// Run starts everything, serves until ctx ends, then stops everything,
// DynamoDB Local included. It returns nil after a clean stop, or the
// reason it could not start or had to stop.
func Run(ctx context.Context, o Options) (err error) {
	o.defaults()
	profile, err := schema.ParseEventsProfile(string(o.EventsProfile))
	if err != nil {
		return err
	}
	o.EventsProfile = profile
	if o.Shards == 0 {
		o.Shards = 1
	}
	if o.Shards < 1 || o.Shards > shard.MaxShards {
		return fmt.Errorf("shards %d is invalid: use 1 to %d (make dev SHARDS=8)", o.Shards, shard.MaxShards)
	}
	if !event.ValidTenantID(o.Tenant) {
		return fmt.Errorf("tenant %q is invalid: use 1-128 characters of [A-Za-z0-9_.:-], starting with a letter or digit", o.Tenant)
	}
	if _, err := contract.ParseRetrySchedule(o.WebhookSchedule); err != nil {
		return fmt.Errorf("webhook schedule: %w", err)
	}
	// The template and the API's port first: failing here costs nothing.
	template, err := localapi.ReadTemplate(o.Template)
	if err != nil {
		return err
	}
	sqsTemplate, err := sqsesm.ParseTemplate(template)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Template, err)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("the API cannot listen on %s (%v): stop what uses it, or pass another address (make dev ADDR=127.0.0.1:8081, or -addr)", o.Addr, err)
	}
	defer ln.Close()
	var sink io.Writer = io.Discard
	if o.DeliveriesFile != "" {
		f, err := os.OpenFile(o.DeliveriesFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("open the deliveries file: %w", err)
		}
		defer f.Close()
		sink = f
	}

	eng, err := startEngine(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		if serr := eng.stop(); serr != nil && err == nil {
			err = serr
		}
	}()

	log := slog.New(slog.NewJSONHandler(&syncio.Writer{W: o.Stdout}, nil))
	client := eng.client
	eventsCreated, err := ddb.CreateTable(ctx, client, schema.EventsFor(o.EventsProfile), o.EventsTable, true)
	if err != nil {
		return err
	}
	if _, err := ddb.CreateTable(ctx, client, schema.APIKeys(), o.KeysTable, true); err != nil {
		return err
	}
	// The queues, the stream consumer and the webhook function, as the
	// template configures them.
	sq, err := startSQS(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		if serr := sq.stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	kms, secretsKey, box, err := startKMS(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		if serr := kms.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	fns, err := setupFunctions(ctx, sqsTemplate, sq.client, o, secretsKey)
	if err != nil {
		return err
	}
	events := store.New(client, o.EventsTable, store.WithProfile(o.EventsProfile), store.WithSharding(o.Shards > 1))
	rcv := newReceiver(tenantSecrets(events.ListSubscriptions, box, o.Tenant))
	defer rcv.srv.Close()
	var (
		retryQueue dispatch.Queue
		drivers    []*sqsesm.Driver
	)
	if w := fns.webhooks; w != nil {
		retryQueue = dispatch.SQSQueue{Client: sq.client, URL: w.QueueURL}
		dispatcher, err := dispatch.New(dispatch.Config{
			Store:        store.New(client, w.EventsTable, store.WithProfile(w.EventsProfile), store.WithSharding(o.Shards > 1 || w.EventsSharding), store.WithRoundHold(w.RoundHold)),
			Queue:        retryQueue,
			Client:       rcv.client(w.Timeout, o.WebhookRoots...),
			Schedule:     w.Schedule,
			DisableAfter: w.DisableAfter,
			Logger:       log,
			Secrets:      box,
			Metrics:      o.WebhookMetrics,
			// As lambda/webhooks: the template's isolation settings.
			Parallel:              w.Parallel,
			BreakerThreshold:      w.BreakerThreshold,
			BreakerCooldown:       w.BreakerCooldown,
			SlowAfter:             w.SlowAfter,
			EndpointRate:          w.EndpointRate,
			SlowLaneAfter:         w.SlowLaneAfter,
			TenantSlowConcurrency: w.TenantSlowConcurrency,
		})
		if err != nil {
			return err
		}
		for _, m := range fns.mappings {
			s := m.Settings
			s.MaximumConcurrency = m.Concurrency()
			q := fns.queues[m.Queue.LogicalID]
			d, err := sqsesm.New(sqsesm.Config{
				Client: sq.client, QueueURL: q.URL, QueueARN: q.ARN, Settings: s,
				// As lambda/webhooks passes it to lambda.Start.
				Handler:      dispatcher.HandleSQS,
				FunctionName: fns.webhooksFn, Logger: log,
			})
			if err != nil {
				return fmt.Errorf("event source mapping %s: %w", m.LogicalID, err)
			}
			drivers = append(drivers, d)
		}
	}

	// The demo key is sharded before any request uses it (no authorizer
	// answer can be cached): a growth may take effect at once.
	keys := apikey.NewStore(client, o.KeysTable, apikey.WithShardSwitchDelay(0))
	key, _, err := keys.Create(ctx, o.Tenant, "make dev demo key")
	if err != nil {
		return fmt.Errorf("mint the demo API key: %w", err)
	}
	if o.Shards > 1 {
		if _, err := keys.SetShards(ctx, o.Tenant, o.Shards); err != nil {
			return fmt.Errorf("shard the demo tenant: %w", err)
		}
	}

	secret := make([]byte, 48)
	_, _ = rand.Read(secret)
	api, err := localapi.New(localapi.Config{
		Template:    template,
		DB:          client,
		EventsTable: o.EventsTable,
		KeysTable:   o.KeysTable,
		// The table made above, whatever the template's table was.
		EventsProfile:  o.EventsProfile,
		EventsSharding: o.Shards > 1,
		CursorSecret:   []byte(base64.RawURLEncoding.EncodeToString(secret)),
		Logger:         log,
		WebhookQueue:   retryQueue, AllowPrivateTargets: true,
		KMS: kms.Client, SecretsKey: secretsKey,
	})
	if err != nil {
		return fmt.Errorf("serve %s: %w", o.Template, err)
	}

	deliveries := &deliveryLog{w: sink, log: log}
	var publisher streamconsumer.Publisher = streampoll.SinkFunc(deliveries.deliver)
	queueURL := "local-sink"
	var dead streamconsumer.DeadLetter
	if c := fns.consumer; c != nil {
		publisher = queuePublisher{queue: streamconsumer.SQSPublisher{Client: sq.client, QueueURL: c.QueueURL}, sent: deliveries, log: log}
		queueURL = c.QueueURL
		if c.DeadLetterQueueURL != "" {
			dead = streamconsumer.SQSDeadLetter{Client: sq.client, QueueURL: c.DeadLetterQueueURL}
		}
	}
	consumer, err := streamconsumer.New(streamconsumer.Config{Publisher: publisher, QueueURL: queueURL, DeadLetter: dead, Logger: log})
	if err != nil {
		return err
	}
	arn, err := streampoll.LatestStreamARN(ctx, client, o.EventsTable)
	if err != nil {
		return err
	}
	// A table kept from an earlier run was delivered then: start at the
	// stream's end. A new table: from its start.
	reader := streampoll.NewStreamReader(eng.streams, arn, streampoll.StreamReaderOptions{Latest: !eventsCreated, Region: eng.region})

	mux := http.NewServeMux()
	mux.Handle(DeliveriesPath, deliveries)
	mux.Handle(WebhooksPath, rcv)
	mux.Handle("/", api.Gateway)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second}

	info := Info{
		URL: "http://" + ln.Addr().String() + api.BasePath, DeliveriesURL: "http://" + ln.Addr().String() + DeliveriesPath,
		WebhooksURL: "http://" + ln.Addr().String() + WebhooksPath, ReceiverURL: rcv.srv.URL,
		Template: o.Template, Stage: api.Gateway.Stage(), DynamoDBEndpoint: eng.endpoint, DynamoDBPid: eng.pid,
		SQSEndpoint: sq.endpoint, SQSPid: sq.pid, Queues: fns.queues,
		Tenant: o.Tenant, APIKey: key, EventsTable: o.EventsTable, KeysTable: o.KeysTable,
		KMSEndpoint: kms.Endpoint, KMSPid: kms.Pid(), SecretsKey: secretsKey,
	}
	// Before the log lines start: connections wait in the listen backlog.
	printSummary(o, info, !eventsCreated, fns.describe())

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2+len(drivers))
	var wg sync.WaitGroup
	wg.Add(2 + len(drivers))
	for _, d := range drivers {
		go func() {
			defer wg.Done()
			if err := d.Run(runCtx); err != nil {
				errc <- fmt.Errorf("webhook event source mapping: %w", err)
			}
		}()
	}
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("API server: %w", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := reader.Poll(runCtx, consumer.Handle, streampoll.PollOptions{Interval: o.PollInterval, Logger: log}); err != nil && runCtx.Err() == nil {
			errc <- fmt.Errorf("stream poller: %w", err)
		}
	}()

	if o.Ready != nil {
		o.Ready <- info
	}

	select {
	case <-ctx.Done():
	case err = <-errc:
	case <-eng.done:
		err = fmt.Errorf("DynamoDB Local exited unexpectedly: %s", eng.output())
	case <-sq.done:
		err = fmt.Errorf("the SQS engine exited unexpectedly: %s", sq.output())
	case <-kms.Done():
		err = fmt.Errorf("local-kms exited unexpectedly: %s", kms.Output())
	}
	// The poller and the event source mappings stop first (the running
	// invocations finish), then the API; the engines last (deferred).
	cancel()
	shutdown, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if serr := srv.Shutdown(shutdown); serr != nil && err == nil {
		err = fmt.Errorf("shut the API down: %w", serr)
	}
	wg.Wait()
	return err
}

// engine is the DynamoDB that Run serves from: a DynamoDB Local it
// started, or the one at Options.EndpointURL.
type engine struct {
	client   *dynamodb.Client
	streams  *dynamodbstreams.Client
	endpoint string
	region   string
	pid      int             // 0 for an engine Run did not start
	done     <-chan struct{} // nil (never ready) for an engine Run did not start
	output   func() string
	stop     func() error
}

func startEngine(ctx context.Context, o Options) (*engine, error) {
	if o.EndpointURL != "" {
		do := ddb.Options{EndpointURL: o.EndpointURL}
		cfg, err := ddbconfig.LoadConfig(ctx, do)
		if err != nil {
			return nil, err
		}
		return &engine{
			client: ddb.ClientFromConfig(cfg, do),
			streams: dynamodbstreams.NewFromConfig(cfg, func(so *dynamodbstreams.Options) {
				so.BaseEndpoint = aws.String(o.EndpointURL)
			}),
			endpoint: o.EndpointURL, region: cfg.Region,
			stop: func() error { return nil },
		}, nil
	}
	port := o.DynamoDBPort
	if port < 0 {
		port = 0
	}
	proc, err := ddblocal.Start(ctx, ddblocal.Options{Port: port, DataDir: o.DataDir, Jar: o.Jar, Java: o.Java})
	if err != nil {
		if errors.Is(err, ddblocal.ErrPortInUse) {
			err = fmt.Errorf("%w (make dev DYNAMODB_PORT=8001, or -dynamodb-port; -1 picks a free port)", err)
		}
		return nil, err
	}
	return &engine{
		client: proc.Client, streams: ddblocal.NewStreamsClient(proc.Endpoint),
		endpoint: proc.Endpoint, region: ddb.LocalRegion, pid: proc.Pid(),
		done: proc.Done(), output: proc.Output, stop: proc.Stop,
	}, nil
}

// SecretsKeyAlias names make dev's key on local-kms that seals webhook
// signing secrets (found again in DataDir/kms on the next run).
const SecretsKeyAlias = "alias/triggers-dev-webhook-secrets"

// startKMS starts local-kms (building it from tools/go.mod the first
// time), keeping its keys in DataDir/kms when DataDir is set, and returns
// it with the ARN of SecretsKeyAlias's key and a box on that key.
func startKMS(ctx context.Context, o Options) (*kmslocal.Process, string, *secretbox.Box, error) {
	ko := kmslocal.Options{Install: true}
	if o.DataDir != "" {
		ko.DataDir = filepath.Join(o.DataDir, "kms")
	}
	keys, err := kmslocal.Start(ctx, ko)
	if err != nil {
		return nil, "", nil, fmt.Errorf("local-kms (webhook signing secrets): %w", err)
	}
	arn, err := keys.EnsureKey(ctx, SecretsKeyAlias)
	if err == nil {
		var box *secretbox.Box
		if box, err = secretbox.New(keys.Client, arn, secretbox.Options{}); err == nil {
			return keys, arn, box, nil
		}
	}
	_ = keys.Stop()
	return nil, "", nil, err
}

func printSummary(o Options, in Info, kept bool, webhooks []string) {
	storage := "in memory (gone at exit; keep it with make dev DATA=.dev-data)"
	if o.DataDir != "" {
		abs, _ := filepath.Abs(o.DataDir)
		storage = "kept in " + abs
		if kept {
			storage += " (tables found: the poller starts at the stream's end)"
		}
	}
	w := o.Stdout
	fmt.Fprintf(w, "Triggers dev environment\n")
	fmt.Fprintf(w, "  API:             %s\n", in.URL)
	fmt.Fprintf(w, "                   API Gateway stage %q from %s -> authorizer -> api handler\n", in.Stage, in.Template)
	if o.EndpointURL != "" {
		fmt.Fprintf(w, "  DynamoDB:        %s  (not started here; tables kept at exit)\n", in.DynamoDBEndpoint)
	} else {
		fmt.Fprintf(w, "  DynamoDB Local:  %s  (pid %d) data %s\n", in.DynamoDBEndpoint, in.DynamoDBPid, storage)
	}
	if o.SQSEndpointURL != "" {
		fmt.Fprintf(w, "  SQS:             %s  (not started here; queues kept at exit)\n", in.SQSEndpoint)
	} else {
		fmt.Fprintf(w, "  SQS (moto):      %s  (pid %d) queues in memory\n", in.SQSEndpoint, in.SQSPid)
	}
	fmt.Fprintf(w, "  local-kms:       %s  (pid %d) key %s seals webhook secrets\n", in.KMSEndpoint, in.KMSPid, SecretsKeyAlias)
	fmt.Fprintf(w, "  tables:          %s, %s\n", in.EventsTable, in.KeysTable)
	fmt.Fprintf(w, "  tenant:          %s\n", in.Tenant)
	fmt.Fprintf(w, "  API key:         %s   (new at every start; only its hash is stored)\n", in.APIKey)
	fmt.Fprintf(w, "  deliveries:      %s, and a \"delivered\" log line each (sent to the delivery queue)", in.DeliveriesURL)
	if o.DeliveriesFile != "" {
		fmt.Fprintf(w, ", appended to %s", o.DeliveriesFile)
	}
	fmt.Fprintf(w, "\n  webhooks:        receiver %s (/ok, /fail, /flaky, /gone; verifies signatures), received: %s\n", in.ReceiverURL, in.WebhooksURL)
	if len(webhooks) == 0 {
		fmt.Fprintf(w, "                   off: the template has no webhook function\n")
	}
	for _, l := range webhooks {
		fmt.Fprintf(w, "                   %s\n", l)
	}
	fmt.Fprintf(w, "\nIn another terminal:\n  export TRIGGERS_URL=%s TRIGGERS_KEY=%s TRIGGERS_DELIVERIES=%s\n", in.URL, in.APIKey, in.DeliveriesURL)
	fmt.Fprintf(w, "  export TRIGGERS_RECEIVER=%s TRIGGERS_WEBHOOKS=%s\n", in.ReceiverURL, in.WebhooksURL)
	fmt.Fprintf(w, "  export SQS=%s   # aws sqs list-queues --endpoint-url \"$SQS\"\n", in.SQSEndpoint)
	if o.EndpointURL == "" {
		fmt.Fprintf(w, "  export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_DEFAULT_REGION=%s DDB=%s\n", ddb.LocalRegion, in.DynamoDBEndpoint)
	}
	fmt.Fprintf(w, "Ctrl-C stops everything.\n\n")
}

// deliveryLog is the local sink: it keeps the last deliveries for
// DeliveriesPath, logs each, and appends it to a file.
type deliveryLog struct {
	mu      sync.Mutex
	w       io.Writer
	log     *slog.Logger
	kept    []json.RawMessage
	changed chan struct{} // closed and replaced at every delivery
}

func (d *deliveryLog) deliver(ctx context.Context, m streamconsumer.Message) error {
	line, err := json.Marshal(struct {
		Tenant    string          `json:"tenant"`
		EventType string          `json:"event_type"`
		Event     json.RawMessage `json:"event"`
	}{m.Tenant, m.EventType, m.Body})
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("sink: %w", err) // retried by the consumer
	}
	d.kept = append(d.kept, line)
	if len(d.kept) > maxKept {
		d.kept = d.kept[len(d.kept)-maxKept:]
	}
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
	d.log.LogAttrs(ctx, slog.LevelInfo, "delivered", slog.String("tenant", m.Tenant), slog.String("event_type", m.EventType), slog.String("event_id", m.EventID))
	return nil
}

// ServeHTTP lists the deliveries, oldest first, as
// {"deliveries":[{"tenant","event_type","event"}...]}. With wait=N
// (seconds, at most 30) it waits up to N seconds for at least one.
func (d *deliveryLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte(`{"error":{"code":"method_not_allowed","message":"use GET"}}` + "\n"))
		return
	}
	wait := 0
	if v := r.URL.Query().Get("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 30 {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"invalid_parameter","message":"wait must be whole seconds from 0 to 30"}}` + "\n"))
			return
		}
		wait = n
	}
	deadline := time.After(time.Duration(wait) * time.Second)
	for {
		d.mu.Lock()
		if len(d.kept) > 0 || wait == 0 {
			out := append([]json.RawMessage{}, d.kept...)
			d.mu.Unlock()
			b, _ := json.Marshal(struct {
				Deliveries []json.RawMessage `json:"deliveries"`
			}{out})
			_, _ = w.Write(append(b, '\n'))
			return
		}
		if d.changed == nil {
			d.changed = make(chan struct{})
		}
		ch := d.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			wait = 0
		case <-r.Context().Done():
			return
		}
	}
}
