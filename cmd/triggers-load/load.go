package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/dev/localapi"
	"github.com/triggers-dev/triggers/internal/dev/localgw"
	"github.com/triggers-dev/triggers/internal/event"
	itemconv "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

const (
	// goldenTemplate is the dev API stack's golden snapshot, relative to
	// the module root: it exists in every clone, no synth needed.
	goldenTemplate = "assertions/testdata/triggers-dev-api.json"

	workloadIngest = "ingest"
	workloadInbox  = "inbox"

	// inboxLimit is the inbox page measured: the API's default page.
	inboxLimit = event.DefaultLimit
	// eventType of every event the tool writes.
	eventType = "load.test"
	// sourceIP is what the API records for a loopback client.
	sourceIP = "127.0.0.1"

	minPayload = len(`{"data":""}`)
	maxPayload = 200 << 10
)

// env is the system under test: one DynamoDB Local, its tables, the API
// served through the local gateway, and two tenants with their keys.
type env struct {
	db          *dynamodb.Client
	enginePid   int
	eventsTable string
	url         string // the stage's base URL
	http        *http.Client
	retention   time.Duration
	// ingest and inbox are the tenants of the two workloads (the inbox
	// tenant's page never changes while it is read).
	ingestTenant, ingestKey string
	inboxTenant, inboxKey   string
	body                    []byte // the POST /v1/events body
	createReq               event.CreateRequest
	// rawQueryOpts are the raw inbox arm's Query options (its decoder).
	rawQueryOpts []func(*dynamodb.Options)
	stop         func()
}

func measure(ctx context.Context, o Options, progress io.Writer, prof *profiler) (Report, error) {
	rep := Report{Machine: machine(), Options: o, Met: true}
	fmt.Fprintf(progress, "triggers-load: starting DynamoDB Local and the API (%s)\n", o.Template)
	e, err := start(ctx, o)
	if err != nil {
		return rep, err
	}
	defer e.stop()

	maxConc := 0
	for _, c := range o.Concurrency {
		maxConc = max(maxConc, c)
	}
	e.http.Transport.(*http.Transport).MaxIdleConnsPerHost = maxConc * 2
	for _, w := range o.Workloads {
		api, raw := e.ops(w)
		if err := e.check(ctx, w); err != nil {
			return rep, err
		}
		fmt.Fprintf(progress, "triggers-load: %s: warm-up %s\n", w, o.Warmup)
		for _, op := range []op{raw, api} {
			r := drive(ctx, maxConc, o.Warmup/2, op, 0)
			if r.errors > 0 {
				return rep, fmt.Errorf("%s warm-up failed: %d errors, the first: %s", w, r.errors, r.firstError)
			}
		}
		for _, c := range o.Concurrency {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			fmt.Fprintf(progress, "triggers-load: %s at concurrency %d: %s per arm\n", w, c, o.Duration)
			var a, b runResult
			slice := o.Duration / time.Duration(o.Rounds)
			arm := func(name string, into *runResult, f op, round int) error {
				return prof.run(fmt.Sprintf("%s-c%d-%s-%d", w, c, name, round), func() {
					into.add(drive(ctx, c, slice, f, e.enginePid))
				})
			}
			for round := range o.Rounds {
				// raw, API, API, raw...: neither arm always goes first.
				first, second := func() error { return arm("raw", &b, raw, round) }, func() error { return arm("api", &a, api, round) }
				if round%2 == 1 {
					first, second = second, first
				}
				if err := errors.Join(first(), second()); err != nil {
					return rep, err
				}
			}
			cell := NewCell(w, c, a.stats(), b.stats())
			rep.Met = rep.Met && len(cell.Misses) == 0
			rep.Cells = append(rep.Cells, cell)
		}
	}
	return rep, ctx.Err()
}

// defaultTemplate returns the golden template's path under the module root.
func defaultTemplate() (string, error) {
	root, err := ddblocal.ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, goldenTemplate), nil
}

// start brings up DynamoDB Local, the tables, the keys and the API.
func start(ctx context.Context, o Options) (_ *env, err error) {
	template, err := localapi.ReadTemplate(o.Template)
	if err != nil {
		return nil, err
	}
	proc, err := ddblocal.Start(ctx, ddblocal.Options{Install: true})
	if err != nil {
		return nil, err
	}
	var closers []func()
	e := &env{db: proc.Client, enginePid: proc.Pid(), eventsTable: "load-events", stop: func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}}
	closers = append(closers, func() { _ = proc.Stop() })
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	const keysTable = "load-apikeys"
	if _, err := ddb.CreateTable(ctx, e.db, schema.Events(), e.eventsTable, false); err != nil {
		return nil, err
	}
	if _, err := ddb.CreateTable(ctx, e.db, schema.APIKeys(), keysTable, false); err != nil {
		return nil, err
	}
	keys := apikey.NewStore(e.db, keysTable)
	e.ingestTenant, e.inboxTenant = "load-ingest", "load-inbox"
	if e.ingestKey, _, err = keys.Create(ctx, e.ingestTenant, "triggers-load"); err != nil {
		return nil, fmt.Errorf("create an API key: %w", err)
	}
	if e.inboxKey, _, err = keys.Create(ctx, e.inboxTenant, "triggers-load"); err != nil {
		return nil, fmt.Errorf("create an API key: %w", err)
	}
	api, err := localapi.New(localapi.Config{
		Template: template, DB: e.db, EventsTable: e.eventsTable, KeysTable: keysTable,
		Gateway: localgw.Options{DisableThrottling: !o.Throttle},
	})
	if err != nil {
		return nil, fmt.Errorf("serve %s: %w", o.Template, err)
	}
	e.retention = api.Retention
	if o.RawDecoder == RawDecoderFast {
		e.rawQueryOpts = []func(*dynamodb.Options){ddb.FastQueryDecoding}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: api.Gateway, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	closers = append(closers, func() { _ = srv.Close() })
	e.url = "http://" + ln.Addr().String() + api.BasePath
	e.http = &http.Client{Transport: &http.Transport{MaxIdleConns: 2048, IdleConnTimeout: time.Minute}, Timeout: 30 * time.Second}
	closers = append(closers, e.http.CloseIdleConnections)

	e.body, e.createReq, err = ingestBody(o.Payload)
	if err != nil {
		return nil, err
	}
	// The inbox tenant's page: inboxLimit events and a few more, written
	// by the store itself.
	st := store.New(e.db, e.eventsTable)
	for range inboxLimit + 10 {
		ev, err := e.newEvent()
		if err != nil {
			return nil, err
		}
		if err := st.Put(ctx, e.inboxTenant, ev); err != nil {
			return nil, fmt.Errorf("seed the inbox: %w", err)
		}
	}
	return e, nil
}

// ingestBody returns a POST /v1/events body whose payload JSON is exactly
// size bytes, and the request the API parses from it.
func ingestBody(size int) ([]byte, event.CreateRequest, error) {
	payload := `{"data":"` + strings.Repeat("x", size-minPayload) + `"}`
	body := []byte(`{"event_type":"` + eventType + `","payload":` + payload + `}`)
	req, err := event.ParseCreate(body)
	if err != nil {
		return nil, event.CreateRequest{}, fmt.Errorf("the ingest body: %w", err)
	}
	return body, req, nil
}

// newEvent builds an event exactly as POST /v1/events does for the tool's
// body: a fresh id, the API's retention and metadata.
func (e *env) newEvent() (event.Event, error) {
	return event.New(e.createReq, time.Now(), e.retention, event.Metadata{SourceIP: sourceIP, APIVersion: event.APIVersion})
}

// op is one timed operation; it returns the time of its measured part.
type op func(ctx context.Context) (time.Duration, error)

// ops returns the API and raw operations of a workload.
func (e *env) ops(workload string) (api, raw op) {
	switch workload {
	case workloadIngest:
		return e.apiIngest, e.rawIngest
	default:
		return e.apiInbox, e.rawInbox
	}
}

func (e *env) do(ctx context.Context, method, path, key string, body []byte, want int) (time.Duration, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	t0 := time.Now()
	resp, err := e.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode != want {
		return 0, nil, fmt.Errorf("%s %s: status %d, want %d: %.200s", method, path, resp.StatusCode, want, b)
	}
	return d, b, nil
}

func (e *env) apiIngest(ctx context.Context) (time.Duration, error) {
	d, _, err := e.do(ctx, http.MethodPost, "/v1/events", e.ingestKey, e.body, http.StatusCreated)
	return d, err
}

// rawIngest is store.Put's PutItem: the same item (item.FromEvent), the same
// condition, and the same reading of a refusal that finds this event's
// own id (the SDK's resend of a write whose answer was lost: a success,
// not an error that ends a warm-up; found by review); building the item
// is not timed.
func (e *env) rawIngest(ctx context.Context) (time.Duration, error) {
	ev, err := e.newEvent()
	if err != nil {
		return 0, err
	}
	item := itemconv.FromEvent(e.ingestTenant, ev, schema.ProfileSeed)
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(e.eventsTable),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": schema.AttrUserID},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	t0 := time.Now()
	_, err = e.db.PutItem(ctx, in)
	d := time.Since(t0)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && ccf.Item != nil && itemconv.GetS(ccf.Item, schema.AttrEventID) == ev.ID {
		err = nil
	}
	return d, err
}

func (e *env) apiInbox(ctx context.Context) (time.Duration, error) {
	d, _, err := e.do(ctx, http.MethodGet, fmt.Sprintf("/v1/inbox?limit=%d", inboxLimit), e.inboxKey, nil, http.StatusOK)
	return d, err
}

// inboxQuery is the Query store.List sends for the first page of the
// default inbox (status received, newest first).
func (e *env) inboxQuery() *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:              aws.String(e.eventsTable),
		IndexName:              aws.String(schema.StatusIndex),
		KeyConditionExpression: aws.String("#pk = :pk AND begins_with(#ik, :prefix)"),
		FilterExpression:       aws.String("#ttl >= :now"),
		ExpressionAttributeNames: map[string]string{
			"#pk": schema.AttrUserID, "#ttl": schema.AttrTTL, "#ik": schema.AttrStatusTS,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":     &types.AttributeValueMemberS{Value: e.inboxTenant},
			":now":    &types.AttributeValueMemberN{Value: fmt.Sprint(time.Now().Unix())},
			":prefix": &types.AttributeValueMemberS{Value: string(event.Received) + contract.KeySeparator},
		},
		ScanIndexForward: aws.Bool(false),
		Limit:            aws.Int32(inboxLimit),
	}
}

func (e *env) rawInbox(ctx context.Context) (time.Duration, error) {
	in := e.inboxQuery()
	t0 := time.Now()
	out, err := e.db.Query(ctx, in, e.rawQueryOpts...)
	d := time.Since(t0)
	if err == nil && len(out.Items) != inboxLimit {
		err = fmt.Errorf("raw inbox query: %d items, want %d", len(out.Items), inboxLimit)
	}
	return d, err
}

// check makes sure both arms of a workload do the same work before it is
// measured: the inbox page holds the same events either way.
func (e *env) check(ctx context.Context, workload string) error {
	if workload != workloadInbox {
		return nil
	}
	_, b, err := e.do(ctx, http.MethodGet, fmt.Sprintf("/v1/inbox?limit=%d", inboxLimit), e.inboxKey, nil, http.StatusOK)
	if err != nil {
		return err
	}
	var page struct {
		Events []struct {
			ID string `json:"event_id"`
		} `json:"events"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		return fmt.Errorf("the inbox page: %w", err)
	}
	out, err := e.db.Query(ctx, e.inboxQuery())
	if err != nil {
		return err
	}
	if len(page.Events) != inboxLimit || len(out.Items) != len(page.Events) {
		return fmt.Errorf("inbox: the API's page has %d events and the raw query %d items, want %d each", len(page.Events), len(out.Items), inboxLimit)
	}
	for i, it := range out.Items {
		if id := itemconv.EventFromItem(it).ID; id != page.Events[i].ID {
			return fmt.Errorf("inbox: event %d is %s through the API and %s raw", i, page.Events[i].ID, id)
		}
	}
	return nil
}

// runResult accumulates the runs of one arm of one cell.
type runResult struct {
	lat        []time.Duration
	errors     int
	firstError string
	wall       time.Duration
	// cpu and engineCPU are the CPU time this process and DynamoDB
	// Local used during the run.
	cpu, engineCPU time.Duration
}

func (r *runResult) add(o runResult) {
	r.lat = append(r.lat, o.lat...)
	r.errors += o.errors
	if r.firstError == "" {
		r.firstError = o.firstError
	}
	r.wall += o.wall
	r.cpu += o.cpu
	r.engineCPU += o.engineCPU
}

func (r *runResult) stats() Stats {
	s := Summarize(r.lat, r.errors, r.firstError, r.wall)
	if n := len(r.lat) + r.errors; n > 0 {
		s.CPUPerOp = r.cpu / time.Duration(n)
		s.EngineCPUPerOp = r.engineCPU / time.Duration(n)
	}
	return s
}

// drive runs op from conc goroutines for d and collects the latencies,
// and the CPU time of this process and of the process enginePid (0: not
// measured).
func drive(ctx context.Context, conc int, d time.Duration, o op, enginePid int) runResult {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type worker struct {
		lat    []time.Duration
		errors int
		first  string
	}
	ws := make([]worker, conc)
	cpu0, eng0 := cpuTimes(enginePid)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range ws {
		wg.Go(func() {
			w := &ws[i]
			for time.Now().Before(deadline) && ctx.Err() == nil {
				lat, err := o(ctx)
				if err != nil {
					if ctx.Err() != nil && errors.Is(err, context.Canceled) {
						return
					}
					w.errors++
					if w.first == "" {
						w.first = err.Error()
					}
					continue
				}
				w.lat = append(w.lat, lat)
			}
		})
	}
	wg.Wait()
	r := runResult{wall: time.Since(start)}
	cpu1, eng1 := cpuTimes(enginePid)
	r.cpu, r.engineCPU = cpu1-cpu0, eng1-eng0
	for _, w := range ws {
		r.lat = append(r.lat, w.lat...)
		r.errors += w.errors
		if r.firstError == "" {
			r.firstError = w.first
		}
	}
	return r
}
