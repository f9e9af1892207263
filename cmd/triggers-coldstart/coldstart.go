package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Floor is the name of the hello-world function every function is compared
// with: testdata/hello, the smallest aws-lambda-go main.
const Floor = "hello"

// helloPkg is the floor's package, relative to the module root.
const helloPkg = "./cmd/triggers-coldstart/testdata/hello"

// buildFlags are the deployed flags (constructs/golambda's): the harness
// builds for the host (so the binaries run here) with these, and for
// linux/arm64 for the sizes.
var buildFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w"}

// Functions lists the functions under root/lambda: every directory with a
// main.go.
func Functions(root string) ([]string, error) {
	mains, err := filepath.Glob(filepath.Join(root, "lambda", "*", "main.go"))
	if err != nil {
		return nil, err
	}
	var fns []string
	for _, m := range mains {
		fns = append(fns, filepath.Base(filepath.Dir(m)))
	}
	sort.Strings(fns)
	return fns, nil
}

// Build builds the floor and fns (lambda/<fn>) with the deployed flags for
// goos/goarch ("" for the host) into dir, one binary per function named
// after it, and returns their paths by name.
func Build(ctx context.Context, root, dir, goos, goarch string, fns []string) (map[string]string, error) {
	pkgs := []string{helloPkg}
	for _, fn := range fns {
		pkgs = append(pkgs, "./lambda/"+fn)
	}
	args := append(append([]string{"build"}, buildFlags...), "-o", dir+string(filepath.Separator))
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	bins := map[string]string{}
	for _, fn := range append([]string{Floor}, fns...) {
		bins[fn] = filepath.Join(dir, fn)
	}
	return bins, nil
}

// Environment returns the environment fn gets in the harness: what
// Lambda sets (region, credentials of the role, function name...) and what
// the constructs set, with every AWS endpoint (AWS_ENDPOINT_URL, the
// instance metadata service) at sink, a local address that accepts
// connections and closes them at once. A function that reaches the
// network before its first `next` therefore shows up in the "net" column,
// and as a delay or a failed start. The second result is false for a
// function the harness has no environment for.
func Environment(fn, sink, home string) ([]string, bool) {
	const (
		region  = "eu-west-1"
		account = "123456789012"
		sqs     = "https://sqs." + region + ".amazonaws.com/" + account + "/"
	)
	var own []string
	switch fn {
	case Floor:
	case "api":
		own = []string{
			"EVENTS_TABLE=triggers-prod-data-EventsTable-1A2B3C4D5E6F",
			"CURSOR_SECRET_ARN=arn:aws:secretsmanager:" + region + ":" + account + ":secret:TriggersCursorSecret-AbCdEf",
			"RETENTION_DAYS=30",
			"API_KEY_SOURCES=authorization",
			"METRICS_NAMESPACE=Triggers/triggers-prod-api",
			"WEBHOOK_QUEUE_URL=" + sqs + "triggers-prod-api-WebhookRetry",
			"WEBHOOK_SECRETS_KEY=arn:aws:kms:" + region + ":" + account + ":key/1234abcd-12ab-34cd-56ef-1234567890ab",
		}
	case "authorizer":
		own = []string{
			"API_KEYS_TABLE=triggers-prod-data-ApiKeysTable-1A2B3C4D5E6F",
			"API_KEY_SOURCES=authorization",
		}
	case "streamconsumer":
		own = []string{
			"DELIVERY_QUEUE_URL=" + sqs + "triggers-prod-api-Delivery",
			"DEAD_LETTER_QUEUE_URL=" + sqs + "triggers-prod-api-StreamFailures",
		}
	case "archiver":
		own = []string{
			"ARCHIVE_BUCKET=triggers-prod-data-archive-1a2b3c4d",
			"ARCHIVE_PREFIX=expired/",
		}
	case "webhooks":
		own = []string{
			"EVENTS_TABLE=triggers-prod-data-EventsTable-1A2B3C4D5E6F",
			"WEBHOOK_QUEUE_URL=" + sqs + "triggers-prod-api-WebhookRetry",
			"WEBHOOK_SCHEDULE=5s,5m,30m,2h,10h",
			"WEBHOOK_TIMEOUT=10s",
			"WEBHOOK_DISABLE_AFTER=120h0m0s",
			"WEBHOOK_SECRETS_KEY=arn:aws:kms:" + region + ":" + account + ":key/1234abcd-12ab-34cd-56ef-1234567890ab",
			"METRICS_NAMESPACE=Triggers/triggers-prod-api",
			"LOG_LEVEL=info",
		}
	default:
		return nil, false
	}
	return append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"TZ=:UTC",
		"LANG=en_US.UTF-8",
		"LAMBDA_TASK_ROOT=/var/task",
		"_HANDLER=bootstrap",
		"AWS_REGION=" + region,
		"AWS_DEFAULT_REGION=" + region,
		"AWS_ACCESS_KEY_ID=ASIAEXAMPLEEXAMPLE00",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIEXAMPLEKEYEXAMPLEKEYEXAMPLE",
		"AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEXAMPLE",
		"AWS_LAMBDA_FUNCTION_NAME=triggers-prod-" + fn,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/triggers-prod-" + fn,
		"AWS_LAMBDA_LOG_STREAM_NAME=2026/11/23/[$LATEST]0123456789abcdef",
		"AWS_CONFIG_FILE=" + filepath.Join(home, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "credentials"),
		"AWS_ENDPOINT_URL=http://" + sink,
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=http://" + sink,
	}, own...), true
}

// Run is one start of a function: its init time (process start to its
// first `next`), the connections it opened before that, and why it did not
// get there when it did not.
type Run struct {
	Init time.Duration
	// CPU is the user and system time the process used, all threads: to
	// its first `next` and the kill right after it, where it waits. Less
	// sensitive than Init to other work on the machine.
	CPU time.Duration
	// Conns counts the connections the sink accepted during the init.
	Conns int
	// Err says why the function did not reach `next` (it exited, or
	// timed out); nil when it did.
	Err error
}

// Result is a function's runs.
type Result struct {
	// Name is the function's (lambda/<Name>), or Floor.
	Name string
	// Runs are its starts, in the order they ran.
	Runs []Run
}

// Inits returns the init times of the runs that reached `next`.
func (r Result) Inits() []time.Duration {
	var d []time.Duration
	for _, run := range r.Runs {
		if run.Err == nil {
			d = append(d, run.Init)
		}
	}
	return d
}

// CPUs returns the CPU times of the runs that reached `next`.
func (r Result) CPUs() []time.Duration {
	var d []time.Duration
	for _, run := range r.Runs {
		if run.Err == nil {
			d = append(d, run.CPU)
		}
	}
	return d
}

// Failures returns how many runs did not reach `next`, and the first
// one's error.
func (r Result) Failures() (int, error) {
	n, first := 0, error(nil)
	for _, run := range r.Runs {
		if run.Err != nil {
			if n == 0 {
				first = run.Err
			}
			n++
		}
	}
	return n, first
}

// Conns returns the most connections any run opened before `next`.
func (r Result) Conns() int {
	n := 0
	for _, run := range r.Runs {
		n = max(n, run.Conns)
	}
	return n
}

// Quantile returns the q-quantile (0 < q <= 1, nearest rank) of d, or 0
// for none.
func Quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Harness starts functions against a local Lambda Runtime API, one at a
// time, and times them to their first `next`.
type Harness struct {
	// Timeout bounds one start. Default 10 s.
	Timeout time.Duration

	runtime *http.Server
	rtAddr  string
	next    chan time.Time
	sink    net.Listener
	conns   atomic.Int64
	home    string
	wg      sync.WaitGroup
}

// NewHarness starts the Runtime API and the sink on loopback ports.
func NewHarness() (*Harness, error) {
	h := &Harness{Timeout: 10 * time.Second, next: make(chan time.Time, 1)}
	rt, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h.sink, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rt.Close()
		return nil, err
	}
	if h.home, err = os.MkdirTemp("", "triggers-coldstart-home-"); err != nil {
		rt.Close()
		h.sink.Close()
		return nil, err
	}
	h.rtAddr = rt.Addr().String()
	h.runtime = &http.Server{Handler: http.HandlerFunc(h.serve)}
	h.wg.Add(2)
	go func() { defer h.wg.Done(); _ = h.runtime.Serve(rt) }()
	go func() {
		defer h.wg.Done()
		for {
			c, err := h.sink.Accept()
			if err != nil {
				return
			}
			h.conns.Add(1)
			c.Close()
		}
	}()
	return h, nil
}

// serve is the Runtime API: a `next` is timed and then held open until the
// function is stopped; anything else is refused.
func (h *Harness) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next" {
		select {
		case h.next <- time.Now():
		default:
		}
		<-r.Context().Done()
		return
	}
	http.Error(w, "the cold-start harness serves no invocation", http.StatusNotFound)
}

// Close stops the Runtime API and the sink.
func (h *Harness) Close() error {
	err := errors.Join(h.runtime.Close(), h.sink.Close())
	h.wg.Wait()
	return errors.Join(err, os.RemoveAll(h.home))
}

// Start runs bin as fn once: started with fn's Environment, timed to its
// first `next`, then killed.
func (h *Harness) Start(fn, bin string) Run {
	env, ok := Environment(fn, h.sink.Addr().String(), h.home)
	if !ok {
		return Run{Err: fmt.Errorf("the harness has no environment for lambda/%s: add one to Environment", fn)}
	}
	select { // a late `next` of the previous run
	case <-h.next:
	default:
	}
	cmd := exec.Command(bin)
	cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+h.rtAddr)
	stderr := &tail{max: 2048}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	exited := make(chan error, 1)
	before := h.conns.Load()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Run{Err: err}
	}
	go func() { exited <- cmd.Wait() }()
	timer := time.NewTimer(h.Timeout)
	defer timer.Stop()
	var run Run
	select {
	case t := <-h.next:
		run.Init = t.Sub(start)
		run.Conns = int(h.conns.Load() - before)
		_ = cmd.Process.Kill()
		<-exited
		run.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	case err := <-exited:
		run.Conns = int(h.conns.Load() - before)
		run.Err = fmt.Errorf("exited before its first next (%v): %s", err, stderr.firstLine())
	case <-timer.C:
		run.Conns = int(h.conns.Load() - before)
		_ = cmd.Process.Kill()
		<-exited
		run.Err = fmt.Errorf("no next within %s: %s", h.Timeout, stderr.firstLine())
	}
	return run
}

// Measure starts every function in bins rounds times, interleaved: each
// round starts each function once, in a new random order, after one
// untimed start of each (page cache). Results come in the order of names.
func (h *Harness) Measure(bins map[string]string, names []string, rounds int) []Result {
	for _, fn := range names {
		h.Start(fn, bins[fn])
	}
	res := make([]Result, len(names))
	for i, fn := range names {
		res[i].Name = fn
	}
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	for range rounds {
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			res[i].Runs = append(res[i].Runs, h.Start(names[i], bins[names[i]]))
		}
	}
	return res
}

// tail keeps the start of a process's stderr, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.max - len(t.buf); n > 0 {
		t.buf = append(t.buf, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (t *tail) firstLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := bufio.NewScanner(strings.NewReader(string(t.buf)))
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			return l
		}
	}
	return "(no output)"
}
