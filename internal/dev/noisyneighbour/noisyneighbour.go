// Package noisyneighbour measures how well webhook push delivery isolates
// tenants, on the composed local system that make dev runs
// (internal/dev/devenv: DynamoDB Local, the HTTP API through the API
// Gateway emulator, the stream consumer, the delivery and retry queues on
// moto_server, the webhook function on its event source mappings,
// local-kms).
//
// Tenant A subscribes endpoints that accept TCP connections and never
// answer (Endpoints: loopback listeners that hold every connection
// without a byte in reply, so each request hangs until the webhook
// timeout); tenant B subscribes one healthy https receiver that verifies
// every request's signature and records when each webhook-id first
// arrives. Both post events through the real HTTP API at steady rates for
// Duration, so A's backlog grows (hanging attempts, then attempts put off
// by its open circuits, on the retry queue); Run then waits for B's last
// events and reports B's ingest-to-receipt latency (from the POST's
// response to the receiver's first receipt), what B lost or got twice,
// what A cost (connections, attempts by outcome, attempts put off,
// circuits opened, the queues' depth over time) and the machine's load.
//
// The slow variant (Config.SlowDelay) gives tenant A endpoints that
// answer 200 after a delay, slow to the webhook function's slow lane but
// under the circuit breaker's slow-request limit, so that no circuit
// opens and only the per-tenant slow lane holds A: A posts a burst (and
// optionally a steady flow), its endpoints count the requests they hold
// at once and the (endpoint, event) pairs they answered, and the drain
// waits for A's deliveries too.
//
// Its tests run short forms in go test; cmd/triggers-load -scenario
// noisy-neighbour and -scenario slow-neighbour (make load) run the long
// forms whose figures are in docs/performance.md.
package noisyneighbour

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/dev/devenv"
	"github.com/triggers-dev/triggers/internal/dev/motolocal"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// Tenants of the scenario, and the event types they post.
const (
	TenantIDA  = "noisy-a"
	TenantIDB  = "quiet-b"
	EventTypeA = "noisy.event"
	EventTypeB = "quiet.event"
)

// GoldenTemplate is the dev API stack's golden snapshot, relative to the
// module root (kept identical to a real synth by the assertions golden
// test): the default template, so that no synth is needed.
const GoldenTemplate = "assertions/testdata/triggers-dev-api.json"

// TargetP99 is the target for B's ingest-to-receipt p99 on a developer
// machine while A's backlog grows (the long form's, docs/performance.md).
const TargetP99 = 2 * time.Second

// MaxEndpoints is the API's limit of subscriptions per tenant.
const MaxEndpoints = 20

// Config configures Run. Zero values take the defaults.
type Config struct {
	// Duration is how long both tenants post events. Default: 20 s.
	Duration time.Duration `json:"duration_ns"`
	// RateA is the events per second tenant A posts; 0 posts none, which
	// measures B's baseline beside A's idle subscriptions. Not defaulted:
	// the short form posts 1 a second (more makes the local SQS engine the
	// bottleneck, docs/performance.md).
	RateA float64 `json:"rate_a"`
	// RateB is the events per second tenant B posts. Default: 5.
	RateB float64 `json:"rate_b"`
	// Endpoints is how many subscriptions tenant A has, each to its own
	// endpoint that accepts connections and never answers, 1 to
	// MaxEndpoints. Default: MaxEndpoints.
	Endpoints int `json:"endpoints"`
	// Drain is how long Run waits, after the posting stops, for B's events
	// not yet received. Default: 30 s.
	Drain time.Duration `json:"drain_ns"`
	// Concurrency, when set, replaces the MaximumConcurrency of each of
	// the webhook function's event source mappings
	// (devenv.Options.WebhookConcurrency). Default: 0, the template's.
	Concurrency int `json:"concurrency"`
	// WebhookEnv sets variables of the webhook function's environment over
	// the template's (devenv.Options.WebhookEnv). Default: none, the
	// template's.
	WebhookEnv map[string]string `json:"webhook_env"`
	// PollInterval is the stream poller's pause when the stream has
	// nothing new (devenv.Options.PollInterval). Default: devenv's.
	PollInterval time.Duration `json:"poll_interval_ns"`
	// Interval is the timeline's sampling interval. Default: 1 s.
	Interval time.Duration `json:"interval_ns"`
	// SlowDelay, when positive, makes A's endpoints slow instead of
	// hanging: https receivers that answer 200 after SlowDelay (choose it
	// above the slow lane's WEBHOOK_SLOW_LANE_AFTER and below the
	// breaker's WEBHOOK_SLOW_AFTER, so that the slow lane holds them and
	// no circuit opens). Run then first posts one event of A and waits
	// until every endpoint answered it and, unless the lane is off, is
	// marked slow (the lane holds an endpoint only from its first slow
	// answer on, docs/delivery.md), and its drain waits for A's
	// deliveries too. Default: 0, hanging endpoints.
	SlowDelay time.Duration `json:"slow_delay_ns"`
	// BurstA is how many events A posts at once when the posting starts,
	// on top of RateA. Default: 0.
	BurstA int `json:"burst_a"`
	// Template is the synthesized API stack served. Default:
	// GoldenTemplate under the module root.
	Template string `json:"template"`
	// Logs receives devenv's log lines (JSON). Default: discarded.
	Logs io.Writer `json:"-"`
	// Progress receives a line per timeline sample. Default: none.
	Progress io.Writer `json:"-"`
}

func (c *Config) defaults() error {
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
	if c.RateA < 0 {
		return fmt.Errorf("noisyneighbour: RateA %g is negative: give events per second, or 0 for none", c.RateA)
	}
	if c.RateB <= 0 {
		c.RateB = 5
	}
	if c.Endpoints <= 0 {
		c.Endpoints = MaxEndpoints
	}
	if c.Endpoints > MaxEndpoints {
		return fmt.Errorf("noisyneighbour: %d endpoints: a tenant has at most %d subscriptions", c.Endpoints, MaxEndpoints)
	}
	if c.SlowDelay < 0 || c.BurstA < 0 {
		return fmt.Errorf("noisyneighbour: SlowDelay %s and BurstA %d must not be negative", c.SlowDelay, c.BurstA)
	}
	if c.Drain <= 0 {
		c.Drain = 30 * time.Second
	}
	if c.Concurrency < 0 {
		return fmt.Errorf("noisyneighbour: Concurrency %d is negative: give a MaximumConcurrency, or 0 for the template's", c.Concurrency)
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.Template == "" {
		root, err := ddblocal.ModuleRoot()
		if err != nil {
			return err
		}
		c.Template = filepath.Join(root, GoldenTemplate)
	}
	if c.Logs == nil {
		c.Logs = io.Discard
	}
	return nil
}

// Report is what Run measured.
type Report struct {
	// Config is the run's configuration, defaults filled in.
	Config Config `json:"config"`
	// Webhooks describes the webhook function as it ran: devenv's summary
	// lines (batch size, window, concurrency, timeouts) and the isolation
	// settings of its environment.
	Webhooks []string `json:"webhooks"`
	// Started is when the posting started.
	Started time.Time `json:"started"`
	// B is the healthy tenant's outcome, A the noisy one's.
	B TenantB `json:"b"`
	A TenantA `json:"a"`
	// Timeline samples the system every Config.Interval.
	Timeline []Sample `json:"timeline"`
	// Load is the machine's load and the CPU each process used.
	Load Load `json:"load"`
}

// TenantB is what the healthy tenant saw.
type TenantB struct {
	// Posted counts the events the API accepted (201); PostErrors the
	// posts that failed, FirstPostError the first failure.
	Posted         int    `json:"posted"`
	PostErrors     int    `json:"post_errors"`
	FirstPostError string `json:"first_post_error,omitempty"`
	// Ingest is the POST's latency.
	Ingest Latency `json:"ingest"`
	// Received counts the posted events that arrived; Missing lists those
	// that did not within the drain.
	Received int      `json:"received"`
	Missing  []string `json:"missing,omitempty"`
	// Duplicates counts requests beyond the first per webhook-id, and
	// Duplicated lists those webhook-ids.
	Duplicates int      `json:"duplicates"`
	Duplicated []string `json:"duplicated,omitempty"`
	// Unverified counts requests whose signature did not verify; Foreign
	// requests for an event B did not post (another tenant's).
	Unverified int `json:"unverified"`
	Foreign    int `json:"foreign"`
	// Breaker counts B's attempts put off and circuits opened: its
	// endpoint is healthy, so any is A's failure reaching B. Deferred
	// counts B's attempts put off, by reason (contract.Deferred*).
	Breaker  int            `json:"breaker"`
	Deferred map[string]int `json:"deferred,omitempty"`
	// Latency is ingest to receipt: from the POST's response to the
	// receiver's first receipt of the event's webhook-id.
	Latency Latency `json:"latency"`
}

// TenantA is what the noisy tenant cost.
type TenantA struct {
	// Posted, PostErrors and FirstPostError: as for TenantB.
	Posted         int    `json:"posted"`
	PostErrors     int    `json:"post_errors"`
	FirstPostError string `json:"first_post_error,omitempty"`
	// Connections counts the connections A's endpoints accepted (each one
	// request that hung); MaxHeld is the most held at once.
	Connections int `json:"connections"`
	MaxHeld     int `json:"max_held"`
	// Deferred counts attempts to A's endpoints put off without being
	// made (scheduled), by reason (contract.Deferred*).
	Deferred map[string]int `json:"deferred"`
	// CircuitsOpened counts A's circuits opened, by cause ("slow",
	// "failures").
	CircuitsOpened map[string]int `json:"circuits_opened"`
	// Disabled counts subscriptions disabled.
	Disabled int `json:"disabled"`
	// Attempts counts the attempts made and recorded, by outcome, for
	// every tenant: B's are delivered, so the failed ones are A's.
	Attempts map[string]int `json:"attempts"`
	// Backlog is the retry queue at the end of the posting: A's attempts
	// waiting for their time.
	Backlog QueueDepth `json:"backlog"`
	// Slow is what A's slow endpoints saw (Config.SlowDelay); nil with
	// hanging endpoints.
	Slow *SlowA `json:"slow,omitempty"`
}

// Latency summarizes durations.
type Latency struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P95   time.Duration `json:"p95_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Summarize returns the percentiles of ds (nearest rank), which it does
// not reorder.
func Summarize(ds []time.Duration) Latency {
	s := slices.Clone(ds)
	slices.Sort(s)
	l := Latency{Count: len(s), P50: Percentile(s, 50), P95: Percentile(s, 95), P99: Percentile(s, 99)}
	if len(s) > 0 {
		l.Max = s[len(s)-1]
	}
	return l
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value with at least p% of the values
// at or below it; 0 for no values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100 + 0.999999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// QueueDepth is an SQS queue's approximate depth.
type QueueDepth struct {
	// Visible messages wait for a poller; InFlight are received and not
	// deleted; Delayed are not visible yet (a task's delay).
	Visible  int `json:"visible"`
	InFlight int `json:"in_flight"`
	Delayed  int `json:"delayed"`
}

// Sample is the system at one moment of the run.
type Sample struct {
	// At is the time since the posting started.
	At time.Duration `json:"at_ns"`
	// BReceived counts B's events first received since the last sample;
	// BMaxLatency is the longest latency among them.
	BReceived   int           `json:"b_received"`
	BMaxLatency time.Duration `json:"b_max_latency_ns"`
	// Delivery and Retry are the delivery and retry queues' depths.
	Delivery QueueDepth `json:"delivery"`
	Retry    QueueDepth `json:"retry"`
	// AHeld is how many connections A's endpoints hold open.
	AHeld int `json:"a_held"`
	// ADeferred, ACircuits and Failed are cumulative: attempts put off,
	// circuits opened, attempts failed.
	ADeferred int `json:"a_deferred"`
	ACircuits int `json:"a_circuits"`
	Failed    int `json:"failed"`
	// Load1 is the 1-minute load average.
	Load1 float64 `json:"load1"`
}

// Load is the machine's load during a run.
type Load struct {
	// CPUs is the number of logical CPUs; CPU the processor's model.
	CPUs int    `json:"cpus"`
	CPU  string `json:"cpu"`
	// Start, Max and End are the 1-minute load average when the posting
	// started, its highest sample and at the end.
	Start float64 `json:"start"`
	Max   float64 `json:"max"`
	End   float64 `json:"end"`
	// CPUSeconds is the CPU time (user + system) each process used from
	// the start of the posting to the end of the drain: this process (the
	// API, the stream consumer, the webhook function, the load), DynamoDB
	// Local, moto_server and local-kms.
	CPUSeconds map[string]float64 `json:"cpu_seconds"`
	// Wall is that period's length.
	Wall time.Duration `json:"wall_ns"`
}

// Run starts the environment, runs the scenario and stops everything. An
// environment that stops during the run (an engine exited) ends it: Run
// returns the environment's error, with the report as far as it got.
func Run(ctx context.Context, cfg Config) (rep Report, err error) {
	if err := cfg.defaults(); err != nil {
		return Report{}, err
	}
	rep = Report{Config: cfg}

	// A's endpoints and B's receiver exist before the environment, which
	// must trust the receiver's certificate.
	var hang endpointsA
	roots := []*x509.Certificate{}
	if cfg.SlowDelay > 0 {
		slow := newSlowEndpoints(cfg.Endpoints, cfg.SlowDelay)
		for _, srv := range slow.srvs {
			roots = append(roots, srv.Certificate())
		}
		hang = slow
	} else if hang, err = newHangingEndpoints(cfg.Endpoints); err != nil {
		return rep, err
	}
	defer hang.close()
	rcv := newReceiver()
	defer rcv.srv.Close()
	roots = append(roots, rcv.srv.Certificate())

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	metrics := newCounters()
	ready := make(chan devenv.Info, 1)
	var summary strings.Builder
	// done is closed when the environment has stopped, with envErr set.
	done := make(chan struct{})
	var envErr error
	go func() {
		defer close(done)
		envErr = devenv.Run(runCtx, devenv.Options{
			Addr: "127.0.0.1:0", DynamoDBPort: -1, Template: cfg.Template, Tenant: TenantIDB,
			PollInterval: cfg.PollInterval, WebhookEnv: cfg.WebhookEnv, WebhookConcurrency: cfg.Concurrency,
			WebhookRoots: roots, WebhookMetrics: metrics,
			Stdout: &summaryWriter{summary: &summary, logs: cfg.Logs}, Ready: ready,
		})
	}()
	var info devenv.Info
	select {
	case info = <-ready:
	case <-done:
		return rep, fmt.Errorf("the dev environment did not start: %w", envErr)
	case <-ctx.Done():
		cancel()
		<-done
		return rep, ctx.Err()
	}
	defer func() {
		cancel()
		// Hung requests end at once instead of at their timeout, so the
		// running invocations finish and the environment stops.
		hang.close()
		<-done
		if envErr != nil && (err == nil || errors.Is(err, context.Canceled)) {
			err = fmt.Errorf("the dev environment: %w", envErr)
		}
	}()
	rep.Webhooks = webhookLines(summary.String())

	s, err := setup(ctx, info, hang, rcv)
	if err != nil {
		return rep, err
	}
	if started != nil {
		started(info)
	}
	err = s.run(ctx, cfg, &rep, metrics, done)
	return rep, err
}

// started, when set (by tests), is called with the environment once both
// tenants are set up, before the load starts.
var started func(devenv.Info)

// summaryWriter keeps devenv's start-up summary (up to its last line) and
// passes everything after it, the log lines, to logs.
type summaryWriter struct {
	mu      sync.Mutex
	summary *strings.Builder
	done    bool
	logs    io.Writer
}

const summaryEnd = "Ctrl-C stops everything.\n"

func (w *summaryWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return w.logs.Write(p)
	}
	w.summary.Write(p)
	if strings.Contains(w.summary.String(), summaryEnd) {
		w.done = true
	}
	return len(p), nil
}

// webhookLines returns the summary's lines about the webhook function.
func webhookLines(summary string) []string {
	var out []string
	for _, l := range strings.Split(summary, "\n") {
		l = strings.TrimSpace(l)
		if strings.Contains(l, "through its event source mappings") || strings.HasPrefix(l, "<- ") {
			out = append(out, l)
		}
	}
	return out
}

// scenario is a started environment with both tenants set up.
type scenario struct {
	info          devenv.Info
	http          *http.Client
	keyA, keyB    string
	hang          endpointsA
	rcv           *receiver
	sqs           *sqs.Client
	delivery, rtq string // queue URLs
}

func setup(ctx context.Context, info devenv.Info, hang endpointsA, rcv *receiver) (*scenario, error) {
	s := &scenario{
		info: info, keyB: info.APIKey, hang: hang, rcv: rcv,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second},
		sqs:  motolocal.NewSQSClient(info.SQSEndpoint),
	}
	for id, q := range info.Queues {
		switch {
		case strings.HasPrefix(id, "TriggersDeliveryQueue"):
			s.delivery = q.URL
		case strings.HasPrefix(id, "TriggersWebhooksRetryQueue"):
			s.rtq = q.URL
		}
	}
	if s.delivery == "" || s.rtq == "" {
		return nil, fmt.Errorf("the template has no delivery queue or webhook retry queue (queues: %v)", slices.Sorted(maps.Keys(info.Queues)))
	}
	keys := apikey.NewStore(ddb.NewLocalClient(info.DynamoDBEndpoint), info.KeysTable)
	key, _, err := keys.Create(ctx, TenantIDA, "noisy neighbour")
	if err != nil {
		return nil, fmt.Errorf("mint tenant A's API key: %w", err)
	}
	s.keyA = key
	for i, url := range hang.urls() {
		secret, err := s.subscribe(ctx, s.keyA, url, EventTypeA)
		if err != nil {
			return nil, fmt.Errorf("tenant A: %w", err)
		}
		if slow, ok := hang.(*slowEndpoints); ok {
			sec, err := webhook.ParseSecret(secret)
			if err != nil {
				return nil, fmt.Errorf("tenant A's secret: %w", err)
			}
			slow.setSecret(i, sec)
		}
	}
	secret, err := s.subscribe(ctx, s.keyB, rcv.srv.URL+"/hook", EventTypeB)
	if err != nil {
		return nil, fmt.Errorf("tenant B: %w", err)
	}
	sec, err := webhook.ParseSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("tenant B's secret: %w", err)
	}
	rcv.setSecret(sec)
	return s, nil
}

// call sends an API request and decodes a 2xx response's JSON into out.
func (s *scenario) call(ctx context.Context, key, method, path string, body any, out any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, method, s.info.URL+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, err
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, bytes.TrimSpace(raw))
	}
	return res.StatusCode, json.Unmarshal(raw, out)
}

// subscribe creates a subscription and returns its secret.
func (s *scenario) subscribe(ctx context.Context, key, url, eventType string) (string, error) {
	var out struct {
		Secret string `json:"secret"`
	}
	if _, err := s.call(ctx, key, http.MethodPost, "/v1/subscriptions", map[string]any{"url": url, "event_types": []string{eventType}}, &out); err != nil {
		return "", fmt.Errorf("subscribe %s: %w", url, err)
	}
	return out.Secret, nil
}

// post creates an event and returns its id.
func (s *scenario) post(ctx context.Context, key, eventType string, n int) (string, error) {
	var out struct {
		ID string `json:"event_id"`
	}
	code, err := s.call(ctx, key, http.MethodPost, "/v1/events", map[string]any{"event_type": eventType, "payload": map[string]any{"n": n}}, &out)
	if err == nil && code != http.StatusCreated {
		err = fmt.Errorf("POST /v1/events: %d, want 201", code)
	}
	if err == nil && out.ID == "" {
		err = errors.New("POST /v1/events: no event_id in the response")
	}
	return out.ID, err
}

// posts records one tenant's posts.
type posts struct {
	mu       sync.Mutex
	at       map[string]time.Time // event id -> the POST's response
	ingest   []time.Duration
	errors   int
	firstErr string
}

func (p *posts) record(id string, start, end time.Time, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errors++
		if p.firstErr == "" {
			p.firstErr = err.Error()
		}
		return
	}
	p.at[id] = end
	p.ingest = append(p.ingest, end.Sub(start))
}

// drive posts at rate events per second for d, each post in its own
// goroutine at its time (an open loop: a slow API does not lower the
// rate), and returns once every post has finished.
func drive(ctx context.Context, rate float64, d time.Duration, post func(n int)) {
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var wg sync.WaitGroup
	for n := 0; time.Duration(n)*interval < d; n++ {
		t := time.NewTimer(time.Until(start.Add(time.Duration(n) * interval)))
		select {
		case <-ctx.Done():
			t.Stop()
			wg.Wait()
			return
		case <-t.C:
		}
		wg.Go(func() { post(n) })
	}
	wg.Wait()
}

func (s *scenario) run(ctx context.Context, cfg Config, rep *Report, metrics *counters, envDone <-chan struct{}) error {
	a := &posts{at: map[string]time.Time{}}
	b := &posts{at: map[string]time.Time{}}
	slow, _ := s.hang.(*slowEndpoints)
	if slow != nil {
		if err := s.warmUp(ctx, cfg, slow); err != nil {
			return err
		}
	}
	rep.Load.CPUs, rep.Load.CPU = numCPU(), cpuModel()
	pids := map[string]int{"this process": os.Getpid(), "DynamoDB Local": s.info.DynamoDBPid, "moto_server": s.info.SQSPid, "local-kms": s.info.KMSPid}
	cpu0 := cpuSeconds(pids)
	rep.Load.Start = loadAverage()
	rep.Started = time.Now()

	// The timeline, until the drain ends.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s.sample(sampleCtx, cfg, rep, metrics, b)
	}()

	// The environment stopping (failing) ends the run.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-envDone:
			stop()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for n := range cfg.BurstA {
		wg.Go(func() {
			start := time.Now()
			id, err := s.post(ctx, s.keyA, EventTypeA, -1-n)
			a.record(id, start, time.Now(), err)
		})
	}
	for _, t := range []struct {
		p        *posts
		key, typ string
		rate     float64
	}{{a, s.keyA, EventTypeA, cfg.RateA}, {b, s.keyB, EventTypeB, cfg.RateB}} {
		if t.rate == 0 {
			continue
		}
		wg.Go(func() {
			drive(ctx, t.rate, cfg.Duration, func(n int) {
				start := time.Now()
				id, err := s.post(ctx, t.key, t.typ, n)
				t.p.record(id, start, time.Now(), err)
			})
		})
	}
	wg.Wait()
	rep.A.Backlog = s.depth(ctx, s.rtq)

	// The drain: until every B event arrived (and with slow endpoints
	// every A event reached every endpoint), or Drain.
	b.mu.Lock()
	want := slices.Collect(maps.Keys(b.at))
	b.mu.Unlock()
	a.mu.Lock()
	// Oldest first: event ids are UUIDv7, ordered by their creation.
	wantA := slices.Sorted(maps.Keys(a.at))
	a.mu.Unlock()
	deadline := time.Now().Add(cfg.Drain)
	for (!s.rcv.hasAll(want) || slow != nil && !slow.hasAll(wantA)) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	// The attempts that reached B (and A's slow endpoints) are recorded
	// just after: wait for their records, so the counts below agree (up
	// to 30 s, which a busy machine may need; it ends once they do).
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
		metrics.mu.Lock()
		delivered := metrics.attempts[event.OutcomeDelivered]
		metrics.mu.Unlock()
		want := s.rcv.received()
		if slow != nil {
			want += slow.answeredCount()
		}
		if delivered >= want {
			break
		}
	}
	rep.Load.Wall = time.Since(rep.Started)
	cpu1 := cpuSeconds(pids)
	stopSampling()
	<-sampled
	rep.Load.End = loadAverage()
	rep.Load.CPUSeconds = map[string]float64{}
	for name := range pids {
		if pids[name] > 0 {
			rep.Load.CPUSeconds[name] = cpu1[name] - cpu0[name]
		}
	}

	rep.B = s.rcv.outcome(b)
	rep.B.Breaker, rep.B.Deferred = metrics.otherTenant()
	if slow != nil {
		slow.outcome(&rep.A, wantA, s.rcv.lastFirst())
		rep.A.Slow.Occupancy = slow.occupancy(rep.Started.Add(rep.Load.Wall))
	}
	rep.A.Posted, rep.A.PostErrors, rep.A.FirstPostError = len(a.at), a.errors, a.firstErr
	rep.A.Connections, rep.A.MaxHeld = s.hang.counts()
	metrics.fill(&rep.A)
	return ctx.Err()
}

// sample appends a Sample every Interval until ctx ends.
func (s *scenario) sample(ctx context.Context, cfg Config, rep *Report, metrics *counters, b *posts) {
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	seen := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		arrivals := s.rcv.arrivalsSince(seen)
		seen += len(arrivals)
		smp := Sample{At: time.Since(rep.Started), BReceived: len(arrivals), Load1: loadAverage()}
		b.mu.Lock()
		for _, a := range arrivals {
			if at, ok := b.at[a.id]; ok {
				smp.BMaxLatency = max(smp.BMaxLatency, a.at.Sub(at))
			}
		}
		b.mu.Unlock()
		smp.Delivery, smp.Retry = s.depth(ctx, s.delivery), s.depth(ctx, s.rtq)
		smp.AHeld = s.hang.held()
		smp.ADeferred, smp.ACircuits, smp.Failed = metrics.totals()
		rep.Timeline = append(rep.Timeline, smp)
		rep.Load.Max = max(rep.Load.Max, smp.Load1)
		if cfg.Progress != nil {
			fmt.Fprintln(cfg.Progress, FormatSample(smp))
		}
	}
}

// depth reads a queue's approximate depth; -1s when it cannot.
func (s *scenario) depth(ctx context.Context, url string) QueueDepth {
	out, err := s.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	}})
	if err != nil {
		return QueueDepth{-1, -1, -1}
	}
	n := func(k types.QueueAttributeName) int {
		v, err := strconv.Atoi(out.Attributes[string(k)])
		if err != nil {
			return -1
		}
		return v
	}
	return QueueDepth{
		Visible:  n(types.QueueAttributeNameApproximateNumberOfMessages),
		InFlight: n(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:  n(types.QueueAttributeNameApproximateNumberOfMessagesDelayed),
	}
}

// warmUp posts one event of A and waits, up to Drain, until every
// endpoint answered it and, unless the slow lane is off
// (WEBHOOK_SLOW_LANE_AFTER=off), every A subscription is marked slow;
// then it starts slow's counts anew.
func (s *scenario) warmUp(ctx context.Context, cfg Config, slow *slowEndpoints) error {
	id, err := s.post(ctx, s.keyA, EventTypeA, 0)
	if err != nil {
		return fmt.Errorf("tenant A's warm-up event: %w", err)
	}
	laneOn := cfg.WebhookEnv[contract.EnvWebhookSlowLaneAfter] != "off"
	subs := store.New(ddb.NewLocalClient(s.info.DynamoDBEndpoint), s.info.EventsTable)
	deadline := time.Now().Add(cfg.Drain)
	for {
		done := slow.hasAll([]string{id})
		if done && laneOn {
			list, err := subs.ListSubscriptions(ctx, TenantIDA)
			if err != nil {
				return fmt.Errorf("tenant A's subscriptions: %w", err)
			}
			for _, sub := range list {
				done = done && sub.SlowUntil.After(time.Now())
			}
		}
		if done {
			slow.reset()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("tenant A's warm-up: its event did not reach every endpoint, or the endpoints were not marked slow, within %s", cfg.Drain)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hangingEndpoints are A's endpoints: loopback TCP listeners that accept
// every connection and hold it without answering (not even the TLS
// handshake), until the client gives up or close.
type hangingEndpoints struct {
	lns   []net.Listener
	mu    sync.Mutex
	conns map[net.Conn]bool
	total int
	most  int
	wg    sync.WaitGroup
	once  sync.Once
}

func newHangingEndpoints(n int) (*hangingEndpoints, error) {
	h := &hangingEndpoints{conns: map[net.Conn]bool{}}
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			h.close()
			return nil, err
		}
		h.lns = append(h.lns, ln)
		h.wg.Go(func() { h.accept(ln) })
	}
	return h, nil
}

func (h *hangingEndpoints) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		if h.conns == nil { // closed
			h.mu.Unlock()
			c.Close()
			return
		}
		h.conns[c] = true
		h.total++
		h.most = max(h.most, len(h.conns))
		h.mu.Unlock()
		h.wg.Go(func() {
			// Read and drop what the client sends, answer nothing, until
			// it hangs up.
			_, _ = io.Copy(io.Discard, c)
			c.Close()
			h.mu.Lock()
			delete(h.conns, c)
			h.mu.Unlock()
		})
	}
}

// urls returns the endpoints' webhook URLs.
func (h *hangingEndpoints) urls() []string {
	var out []string
	for _, ln := range h.lns {
		out = append(out, "https://"+ln.Addr().String()+"/hook")
	}
	return out
}

func (h *hangingEndpoints) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

func (h *hangingEndpoints) counts() (total, most int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total, h.most
}

// close stops the listeners and drops every held connection, and waits.
func (h *hangingEndpoints) close() {
	h.once.Do(func() {
		for _, ln := range h.lns {
			ln.Close()
		}
		h.mu.Lock()
		for c := range h.conns {
			c.Close()
		}
		h.conns = nil
		h.mu.Unlock()
		h.wg.Wait()
	})
}

// receiver is B's endpoint: https on loopback, it verifies each request's
// signature with B's secret, records the first receipt of each
// webhook-id and answers 200 (401 to a request that does not verify).
type receiver struct {
	srv        *httptest.Server
	mu         sync.Mutex
	secret     webhook.Secret
	first      map[string]time.Time
	order      []arrival // first receipts, in order
	requests   map[string]int
	unverified int
}

type arrival struct {
	id string
	at time.Time
}

func newReceiver() *receiver {
	r := &receiver{first: map[string]time.Time{}, requests: map[string]int{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	return r
}

func (r *receiver) setSecret(s webhook.Secret) {
	r.mu.Lock()
	r.secret = s
	r.mu.Unlock()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	now := time.Now()
	id := req.Header.Get(webhook.HeaderID)
	r.mu.Lock()
	err := (&webhook.Verifier{Secrets: []webhook.Secret{r.secret}}).Verify(req.Header, body)
	if err != nil {
		r.unverified++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.requests[id]++
	if _, ok := r.first[id]; !ok {
		r.first[id] = now
		r.order = append(r.order, arrival{id, now})
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// received counts the webhook-ids received.
func (r *receiver) received() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.first)
}

func (r *receiver) hasAll(ids []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if _, ok := r.first[id]; !ok {
			return false
		}
	}
	return true
}

// lastFirst returns the last first receipt's time (zero for none).
func (r *receiver) lastFirst() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return time.Time{}
	}
	return r.order[len(r.order)-1].at
}

// arrivalsSince returns the first receipts after the first n.
func (r *receiver) arrivalsSince(n int) []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order[n:])
}

// outcome compares what arrived with what B posted.
func (r *receiver) outcome(b *posts) TenantB {
	r.mu.Lock()
	defer r.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := TenantB{Posted: len(b.at), PostErrors: b.errors, FirstPostError: b.firstErr, Ingest: Summarize(b.ingest), Unverified: r.unverified}
	var lat []time.Duration
	for id, posted := range b.at {
		got, ok := r.first[id]
		if !ok {
			out.Missing = append(out.Missing, id)
			continue
		}
		out.Received++
		lat = append(lat, got.Sub(posted))
	}
	slices.Sort(out.Missing)
	for id, n := range r.requests {
		if _, ok := b.at[id]; !ok {
			out.Foreign += n
			continue
		}
		if n > 1 {
			out.Duplicates += n - 1
			out.Duplicated = append(out.Duplicated, id)
		}
	}
	slices.Sort(out.Duplicated)
	out.Latency = Summarize(lat)
	return out
}
