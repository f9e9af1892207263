package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/dev/motolocal"
	"github.com/triggers-dev/triggers/internal/syncio"
)

// bin is triggers-dev, built once: the tests run it as `make dev` does.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "triggers-dev-test")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "triggers-dev")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build triggers-dev: %v\n%s", err, out)
		os.Exit(1)
	}
	// Install DynamoDB Local when missing, as make dev's deps target does.
	root, err := ddblocal.ModuleRoot()
	if err == nil {
		_, err = ddblocal.FindJar(context.Background(), root, true)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "DynamoDB Local: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// dev is a running triggers-dev process.
type dev struct {
	cmd            *exec.Cmd
	stdout, stderr *syncio.Buffer
	done           chan error
	url, key, ddb  string
	deliveries     string
	receiver       string
	webhooks       string
	ddbPid         int
	sqs            string
	sqsPid         int
	kmsPid         int
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

var (
	reURL  = regexp.MustCompile(`(?m)^  API:\s+(\S+)$`)
	reDel  = regexp.MustCompile(`(?m)^  deliveries:\s+(\S+),`)
	reKey  = regexp.MustCompile(`(?m)^  API key:\s+(\S+)`)
	reDDB  = regexp.MustCompile(`(?m)^  DynamoDB Local:\s+(\S+)\s+\(pid (\d+)\)`)
	reHook = regexp.MustCompile(`(?m)^  export TRIGGERS_RECEIVER=(\S+) TRIGGERS_WEBHOOKS=(\S+)$`)
	reExt  = regexp.MustCompile(`(?m)^  DynamoDB:\s+(\S+)\s+\(not started here`)
	reSQS  = regexp.MustCompile(`(?m)^  SQS \(moto\):\s+(\S+)\s+\(pid (\d+)\)`)
	reSQSx = regexp.MustCompile(`(?m)^  SQS:\s+(\S+)\s+\(not started here`)
	reKMS  = regexp.MustCompile(`(?m)^  local-kms:\s+(\S+)\s+\(pid (\d+)\)`)
)

// template is the dev API stack as synthesized, kept identical to the
// real synth by the assertions golden test: the tests do not synthesize.
const template = "../../assertions/testdata/triggers-dev-api.json"

// start runs triggers-dev on the golden template and waits for its summary.
func start(t *testing.T, env []string, args ...string) *dev {
	t.Helper()
	d := &dev{cmd: exec.Command(bin, append([]string{"-template", template}, args...)...), stdout: &syncio.Buffer{}, stderr: &syncio.Buffer{}, done: make(chan error, 1)}
	d.cmd.Stdout, d.cmd.Stderr = d.stdout, d.stderr
	d.cmd.Env = append(os.Environ(), env...)
	require.NoError(t, d.cmd.Start())
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	})
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(d.stdout.String(), "Ctrl-C stops everything.") {
		select {
		case err := <-d.done:
			t.Fatalf("triggers-dev exited before serving (%v)\nstdout:\n%s\nstderr:\n%s", err, d.stdout, d.stderr)
		case <-deadline:
			t.Fatalf("triggers-dev did not start in 2 minutes\nstdout:\n%s\nstderr:\n%s", d.stdout, d.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	out := d.stdout.String()
	d.url = reURL.FindStringSubmatch(out)[1]
	d.key = reKey.FindStringSubmatch(out)[1]
	d.deliveries = reDel.FindStringSubmatch(out)[1]
	if m := reHook.FindStringSubmatch(out); m != nil {
		d.receiver, d.webhooks = m[1], m[2]
	}
	m := reKMS.FindStringSubmatch(out)
	require.NotNil(t, m, "no local-kms line in the summary:\n%s", out)
	d.kmsPid, _ = strconv.Atoi(m[2])
	require.True(t, alive(d.kmsPid), "local-kms pid %d", d.kmsPid)
	if m := reDDB.FindStringSubmatch(out); m != nil {
		d.ddb = m[1]
		d.ddbPid, _ = strconv.Atoi(m[2])
		require.True(t, alive(d.ddbPid), "DynamoDB Local pid %d", d.ddbPid)
	} else {
		m := reExt.FindStringSubmatch(out)
		require.NotNil(t, m, "no DynamoDB line in the summary:\n%s", out)
		d.ddb = m[1]
	}
	if m := reSQS.FindStringSubmatch(out); m != nil {
		d.sqs = m[1]
		d.sqsPid, _ = strconv.Atoi(m[2])
		require.True(t, alive(d.sqsPid), "SQS engine pid %d", d.sqsPid)
	} else {
		m := reSQSx.FindStringSubmatch(out)
		require.NotNil(t, m, "no SQS line in the summary:\n%s", out)
		d.sqs = m[1]
	}
	return d
}

// interrupt sends Ctrl-C's SIGINT and checks that triggers-dev exits 0
// and takes DynamoDB Local and the SQS engine with it.
func (d *dev) interrupt(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(os.Interrupt))
	select {
	case err := <-d.done:
		require.NoError(t, err, "exit after Ctrl-C; stderr:\n%s", d.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("triggers-dev still running 30 s after SIGINT")
	}
	assert.Contains(t, d.stderr.String(), "triggers-dev: stopped")
	if d.ddbPid != 0 {
		assert.False(t, alive(d.ddbPid), "DynamoDB Local (pid %d) left running", d.ddbPid)
	}
	if d.sqsPid != 0 {
		assert.False(t, alive(d.sqsPid), "the SQS engine (pid %d) left running", d.sqsPid)
	}
	assert.False(t, alive(d.kmsPid), "local-kms (pid %d) left running", d.kmsPid)
}

// docBlock returns the shell block of docs/local-development.md that
// follows its line starting with marker.
func docBlock(t *testing.T, marker string) string {
	t.Helper()
	root, err := ddblocal.ModuleRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "docs", "local-development.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(raw), "\n"+marker)
	require.True(t, ok, "docs/local-development.md has no line starting with %q", marker)
	_, after, ok = strings.Cut(after, "```sh\n")
	require.True(t, ok, "no ```sh block after %q", marker)
	block, _, ok := strings.Cut(after, "```")
	require.True(t, ok, "unterminated block after %q", marker)
	return block
}

func runBash(t *testing.T, script string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "script failed:\n%s\nstderr:\n%s\nstdout:\n%s", script, stderr.String(), out)
	return string(out)
}

// decodeAll decodes a stream of JSON documents.
func decodeAll(t *testing.T, s string) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	var docs []map[string]any
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err, "output:\n%s", s)
		docs = append(docs, m)
	}
}

func ids(events any) []string {
	var out []string
	for _, e := range events.([]any) {
		out = append(out, e.(map[string]any)["event_id"].(string))
	}
	return out
}

// The local-development walkthrough and AWS CLI commands, run as written against a
// make dev-style process: post, inbox, delivery, ack, then the seed's
// verification commands; Ctrl-C then stops everything.
func TestReadmeWalkthrough(t *testing.T) {
	deliveries := filepath.Join(t.TempDir(), "deliveries.jsonl")
	d := start(t, nil, "-addr", "127.0.0.1:0", "-dynamodb-port", "-1", "-deliveries", deliveries)
	assert.Contains(t, d.stdout.String(), "export TRIGGERS_URL="+d.url+" TRIGGERS_KEY="+d.key+" TRIGGERS_DELIVERIES="+d.deliveries,
		"the summary prints the walkthrough's exports")
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/live$`, d.url, "the stage URL, as the deployed ApiUrl")
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/_dev/deliveries$`, d.deliveries)

	out := runBash(t, docBlock(t, "<!-- walkthrough"), "TRIGGERS_URL="+d.url, "TRIGGERS_KEY="+d.key, "TRIGGERS_DELIVERIES="+d.deliveries)
	docs := decodeAll(t, out)
	require.Len(t, docs, 6, "one JSON document per step:\n%s", out)
	ev := docs[0]
	id, _ := ev["event_id"].(string)
	require.NotEmpty(t, id, "step 1 returns the event: %v", ev)
	assert.Equal(t, "received", ev["status"])
	assert.Equal(t, "walkthrough-1", ev["metadata"].(map[string]any)["correlation_id"])
	assert.Equal(t, []string{id}, ids(docs[1]["events"]), "step 2: the inbox holds the event")
	var delivered []string
	for _, dl := range docs[2]["deliveries"].([]any) {
		m := dl.(map[string]any)
		assert.Equal(t, "demo", m["tenant"])
		assert.Equal(t, "user.created", m["event_type"])
		delivered = append(delivered, m["event"].(map[string]any)["event_id"].(string))
	}
	assert.Equal(t, []string{id}, delivered, "step 3: delivered once through the stream")
	assert.Equal(t, []any{id}, docs[3]["delivered"], "step 4: ack")
	assert.Empty(t, docs[4]["events"], "step 5: inbox empty")
	assert.Equal(t, "delivered", docs[5]["status"], "step 5: event delivered")

	raw, err := os.ReadFile(deliveries)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"event_id":"`+id+`"`, "-deliveries file")
	assert.Regexp(t, `"msg":"delivered".*"event_id":"`+id+`"`, d.stdout.String(), "delivery log line")
	// Every API request of the walkthrough (all but step 3's deliveries)
	// went gateway -> authorizer -> api handler: the gateway's line and the
	// API function's line per request, the authorizer once (then cached).
	// The gateway logs after answering: wait for the last line.
	require.Eventually(t, func() bool { return strings.Count(d.stdout.String(), `"msg":"localgw request"`) >= 5 },
		5*time.Second, 20*time.Millisecond, "gateway lines:\n%s", d.stdout)
	logs := d.stdout.String()
	assert.Equal(t, 5, strings.Count(logs, `"msg":"localgw request"`), "gateway lines:\n%s", logs)
	assert.Equal(t, 5, strings.Count(logs, `"msg":"request"`), "API function lines:\n%s", logs)
	assert.Equal(t, 1, strings.Count(logs, `"msg":"authorized"`), "authorizer calls:\n%s", logs)
	assert.Equal(t, 4, strings.Count(logs, `"authorizer_cache_hit":true`), "cache hits:\n%s", logs)

	out = runBash(t, docBlock(t, "<!-- aws-cli"), "DDB="+d.ddb)
	docs = decodeAll(t, out)
	require.Len(t, docs, 5, "list-tables, describe-table, describe-time-to-live, two queries:\n%s", out)
	assert.ElementsMatch(t, []any{"triggers-apikeys", "triggers-events"}, docs[0]["TableNames"])
	table := docs[1]["Table"].(map[string]any)
	var indexes []string
	for _, ix := range table["GlobalSecondaryIndexes"].([]any) {
		indexes = append(indexes, ix.(map[string]any)["IndexName"].(string))
	}
	assert.ElementsMatch(t, []string{"EventTypeIndex", "StatusIndex"}, indexes)
	assert.Equal(t, "NEW_AND_OLD_IMAGES", table["StreamSpecification"].(map[string]any)["StreamViewType"])
	assert.Equal(t, "ttl", docs[2]["TimeToLiveDescription"].(map[string]any)["AttributeName"])
	for i, q := range docs[3:] {
		require.Equal(t, 1.0, q["Count"], "query %d: %v", i, q)
		item := q["Items"].([]any)[0].(map[string]any)
		assert.Equal(t, id, item["event_id"].(map[string]any)["S"], "query %d", i)
	}

	d.interrupt(t)
}

// DATA keeps tables and events across runs; each run mints a new key for
// the same tenant. A killed triggers-dev takes DynamoDB Local with it.
func TestDataKeptAcrossRuns(t *testing.T) {
	data := filepath.Join(t.TempDir(), "dev-data")
	d := start(t, nil, "-addr", "127.0.0.1:0", "-dynamodb-port", "-1", "-data", data)
	assert.Contains(t, d.stdout.String(), "kept in "+data)
	req, _ := http.NewRequest("POST", d.url+"/v1/events", strings.NewReader(`{"event_type":"kept.across.runs","payload":{"n":1}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var ev struct {
		ID string `json:"event_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ev))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	d.interrupt(t)

	d2 := start(t, nil, "-addr", "127.0.0.1:0", "-dynamodb-port", "-1", "-data", data)
	assert.Contains(t, d2.stdout.String(), "tables found")
	assert.NotEqual(t, d.key, d2.key, "a new key at every start")
	req, _ = http.NewRequest("GET", d2.url+"/v1/events/"+ev.ID, nil)
	req.Header.Set("Authorization", "Bearer "+d2.key)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the event of the first run")

	require.NoError(t, d2.cmd.Process.Kill())
	<-d2.done
	require.Eventually(t, func() bool { return !alive(d2.ddbPid) }, 15*time.Second, 100*time.Millisecond,
		"DynamoDB Local (pid %d) outlived a killed triggers-dev", d2.ddbPid)
	require.Eventually(t, func() bool { return !alive(d2.sqsPid) }, 15*time.Second, 100*time.Millisecond,
		"the SQS engine (pid %d) outlived a killed triggers-dev", d2.sqsPid)
}

// Bad start-up conditions stop triggers-dev at once, exit status 2, with a
// message that says what to do.
func TestStartupErrors(t *testing.T) {
	api, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer api.Close()
	ddbPort, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	defer ddbPort.Close()
	noJava := t.TempDir() // a PATH with no java on it
	sqsPort, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer sqsPort.Close()
	javaOnly := t.TempDir() // a PATH with java but no moto_server or python3
	java, err := exec.LookPath("java")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(java, filepath.Join(javaOnly, "java")))

	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"API port in use", nil, []string{"-addr", api.Addr().String()},
			[]string{"the API cannot listen on " + api.Addr().String(), "make dev ADDR="}},
		{"DynamoDB Local port in use", nil, []string{"-addr", "127.0.0.1:0", "-dynamodb-port", strconv.Itoa(ddbPort.Addr().(*net.TCPAddr).Port)},
			[]string{"DynamoDB Local cannot listen on port", "make dev DYNAMODB_PORT="}},
		{"Java missing", []string{"PATH=" + noJava}, []string{"-addr", "127.0.0.1:0", "-dynamodb-port", "-1"},
			[]string{"java not found", "Java 17 or newer"}},
		{"DynamoDB Local not installed", nil, []string{"-addr", "127.0.0.1:0", "-dynamodb-port", "-1", "-jar", "/nonexistent/DynamoDBLocal.jar"},
			[]string{"DynamoDB Local is not installed", "make deps"}},
		{"SQS port in use", nil, []string{"-addr", "127.0.0.1:0", "-dynamodb-port", "-1", "-sqs-port", strconv.Itoa(sqsPort.Addr().(*net.TCPAddr).Port)},
			[]string{"the SQS engine cannot listen on 127.0.0.1:", "-sqs-port"}},
		{"moto_server missing", []string{"PATH=" + javaOnly}, []string{"-addr", "127.0.0.1:0", "-dynamodb-port", "-1"},
			[]string{"moto_server not found", "pip install 'moto[server]==5.2.1'", "-sqs-endpoint-url"}},
		{"bad webhook schedule", nil, []string{"-addr", "127.0.0.1:0", "-webhook-schedule", "soon"},
			[]string{"webhook schedule:"}},
		{"bad tenant", nil, []string{"-addr", "127.0.0.1:0", "-tenant", "no spaces"},
			[]string{`tenant "no spaces" is invalid`}},
		{"stray argument", nil, []string{"serve"}, []string{`unexpected argument "serve"`}},
		{"bad events profile", nil, []string{"-events-profile", "slim"},
			[]string{`-events-profile: events table profile "slim" is not known: use "seed" (the default) or "lean"`}},
		{"no template", nil, []string{"-addr", "127.0.0.1:0", "-template", "/nonexistent/api.template.json"},
			[]string{"the API template /nonexistent/api.template.json does not exist: run make synth"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"-template", template}, tt.args...)...)
			cmd.Env = append(os.Environ(), tt.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			assert.Equal(t, 2, ee.ExitCode())
			for _, w := range tt.want {
				assert.Contains(t, stderr.String(), w)
			}
			assert.NotContains(t, stdout.String(), "API key:", "nothing served")
			// One line, no stack trace.
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr.String()), "\n")+1, "stderr: %s", stderr.String())
		})
	}
}

// Every line of stdout after the summary is a JSON log line.
func TestLogLinesAreJSON(t *testing.T) {
	d := start(t, nil, "-addr", "127.0.0.1:0", "-dynamodb-port", "-1")
	resp, err := http.Get(d.url + "/v1/inbox")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	d.interrupt(t)
	_, logs, _ := strings.Cut(d.stdout.String(), "Ctrl-C stops everything.\n\n")
	s := bufio.NewScanner(strings.NewReader(logs))
	n := 0
	for s.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(s.Bytes(), &m), "log line %q", s.Text())
		n++
	}
	assert.GreaterOrEqual(t, n, 1, "the 401 request is logged")
}

// -endpoint-url serves from a DynamoDB that is already running (here a
// DynamoDB Local this test starts): the tables are created there under the
// names given, the path works end to end, and at Ctrl-C the engine and
// its tables are left as they were.
func TestExistingEngine(t *testing.T) {
	ctx := context.Background()
	proc, err := ddblocal.Start(ctx, ddblocal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = proc.Stop() })

	d := start(t, nil, "-addr", "127.0.0.1:0", "-endpoint-url", proc.Endpoint, "-events-table", "ext-events", "-keys-table", "ext-keys")
	assert.Equal(t, proc.Endpoint, d.ddb)
	assert.NotContains(t, d.stdout.String(), "DynamoDB Local:", "no engine of its own")
	tables, err := proc.Client.ListTables(ctx, &dynamodb.ListTablesInput{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"ext-events", "ext-keys"}, tables.TableNames)

	req, _ := http.NewRequest("POST", d.url+"/v1/events", strings.NewReader(`{"event_type":"external.engine","payload":{"n":1}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode, "%s", body)
	var ev struct {
		ID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal(body, &ev))
	require.Eventually(t, func() bool {
		res, err := http.Get(d.deliveries)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return strings.Contains(string(b), ev.ID)
	}, 30*time.Second, 100*time.Millisecond, "the stream poller delivers from the external engine")

	d.interrupt(t)
	select {
	case <-proc.Done():
		t.Fatal("the external DynamoDB Local stopped with triggers-dev")
	default:
	}
	out, err := proc.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("ext-events")})
	require.NoError(t, err)
	assert.Positive(t, out.Count, "the events stay in the external engine")
}

// The local-development webhook walkthrough, run as written: a subscription to the
// local receiver's flaky endpoint, an event, a failed first attempt and
// its retry 1 s later, both signed and verified, the attempts listed and
// the event delivered with retry_count 1. It runs on a lean events table
// (-events-profile lean): the dispatcher's failed -> retrying -> delivered
// moves go through the sparse StatusIndex, and the delivered event leaves
// the inbox, which reads that index.
func TestWebhookWalkthrough(t *testing.T) {
	d := start(t, nil, "-addr", "127.0.0.1:0", "-dynamodb-port", "-1", "-events-profile", "lean")
	require.NotEmpty(t, d.receiver, "the summary prints the receiver:\n%s", d.stdout)
	assert.Regexp(t, `^https://127\.0\.0\.1:\d+$`, d.receiver)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/_dev/webhooks$`, d.webhooks)
	// The webhook function runs as the template configures it: its event
	// source mappings' settings, its timeout and WEBHOOK_TIMEOUT (the
	// construct's default, 10 s).
	assert.Regexp(t, `TriggersWebhooksFunction\w+ through its event source mappings: batch 10, window 1s, partial batch responses, timeout 5m0s, webhook timeout 10s`, d.stdout.String())
	assert.Regexp(t, `<- triggers-TriggersDeliveryQueue\w+ \(at most 20 at once, visibility 30m0s, 5 receives -> triggers-TriggersDeliveryDLQ\w+\)`, d.stdout.String())
	assert.Regexp(t, `<- triggers-TriggersWebhooksRetryQueue\w+ \(at most 10 at once, visibility 30m0s, 5 receives -> triggers-TriggersWebhooksRetryDLQ\w+\)`, d.stdout.String())

	out := runBash(t, docBlock(t, "<!-- webhooks"), "TRIGGERS_URL="+d.url, "TRIGGERS_KEY="+d.key,
		"TRIGGERS_RECEIVER="+d.receiver, "TRIGGERS_WEBHOOKS="+d.webhooks)
	docs := decodeAll(t, out)
	require.Len(t, docs, 4, "one JSON document per output:\n%s", out)
	sub := docs[0]
	assert.Equal(t, d.receiver+"/flaky", sub["url"])
	assert.Regexp(t, `^whsec_`, sub["secret"])
	hooks := docs[1]["webhooks"].([]any)
	require.Len(t, hooks, 2, "%v", docs[1])
	first, second := hooks[0].(map[string]any), hooks[1].(map[string]any)
	assert.Equal(t, []any{503.0, true}, []any{first["status"], first["verified"]}, "%v", first)
	assert.Equal(t, []any{200.0, true}, []any{second["status"], second["verified"]}, "%v", second)
	eventID := first["event_id"].(string)
	assert.Equal(t, eventID, first["webhook_id"], "webhook-id is the event id")
	assert.Equal(t, first["webhook_id"], second["webhook_id"], "a retry keeps the webhook-id")
	attempts := docs[2]["attempts"].([]any)
	require.Len(t, attempts, 2)
	a1, a2 := attempts[0].(map[string]any), attempts[1].(map[string]any)
	assert.Equal(t, []any{1.0, "failed", 503.0}, []any{a1["attempt"], a1["outcome"], a1["status_code"]})
	assert.NotEmpty(t, a1["next_attempt_at"])
	assert.Equal(t, []any{2.0, "delivered", 200.0}, []any{a2["attempt"], a2["outcome"], a2["status_code"]})
	assert.Equal(t, "delivered", docs[3]["status"])
	assert.Equal(t, 1.0, docs[3]["retry_count"])
	assert.Regexp(t, `"msg":"webhook attempt".*"outcome":"failed"`, d.stdout.String())
	for status, listed := range map[string]bool{"received": false, "delivered": true} {
		req, _ := http.NewRequest("GET", d.url+"/v1/inbox?status="+status, nil)
		req.Header.Set("Authorization", "Bearer "+d.key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		page, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
		assert.Equal(t, listed, strings.Contains(string(page), eventID), "status=%s: %s", status, page)
	}
	d.interrupt(t)
}

// -sqs-endpoint-url serves the queues from an SQS engine that is already
// running (here a moto_server this test starts): the template's queues
// are created there with the template's attributes, the webhook function
// consumes the delivery queue through its event source mapping (a message
// it cannot handle stays on the queue, received and not deleted), and at
// Ctrl-C the engine and its queues are left as they were.
func TestExistingSQSEngine(t *testing.T) {
	ctx := context.Background()
	proc, err := motolocal.Start(ctx, motolocal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = proc.Stop() })
	sqsc := proc.SQSClient()

	d := start(t, nil, "-addr", "127.0.0.1:0", "-dynamodb-port", "-1", "-sqs-endpoint-url", proc.Endpoint)
	assert.Equal(t, proc.Endpoint, d.sqs)
	assert.NotContains(t, d.stdout.String(), "SQS (moto):", "no engine of its own")
	assert.Contains(t, d.stdout.String(), "export SQS="+proc.Endpoint)

	list, err := sqsc.ListQueues(ctx, &sqs.ListQueuesInput{})
	require.NoError(t, err)
	urls := map[string]string{}
	for _, u := range list.QueueUrls {
		name := u[strings.LastIndex(u, "/")+1:]
		urls[regexp.MustCompile(`[0-9A-F]{8}$`).ReplaceAllString(name, "")] = u
	}
	for _, q := range []string{"triggers-TriggersDeliveryQueue", "triggers-TriggersDeliveryDLQ", "triggers-TriggersWebhooksRetryQueue", "triggers-TriggersWebhooksRetryDLQ", "triggers-TriggersStreamFailures"} {
		assert.Contains(t, urls, q, "queues: %v", list.QueueUrls)
	}
	attrs := func(url string) map[string]string {
		out, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		require.NoError(t, err)
		return out.Attributes
	}
	delivery := urls["triggers-TriggersDeliveryQueue"]
	a := attrs(delivery)
	assert.Equal(t, "1800", a["VisibilityTimeout"])
	assert.JSONEq(t, `{"deadLetterTargetArn":"`+attrs(urls["triggers-TriggersDeliveryDLQ"])["QueueArn"]+`","maxReceiveCount":5}`, a["RedrivePolicy"])
	assert.Equal(t, "345600", attrs(urls["triggers-TriggersWebhooksRetryQueue"])["MessageRetentionPeriod"])

	_, err = sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(delivery), MessageBody: aws.String(`not an event`)})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return attrs(delivery)["ApproximateNumberOfMessagesNotVisible"] == "1" },
		30*time.Second, 100*time.Millisecond, "the mapping received the message and left it (a batch item failure)")
	require.Eventually(t, func() bool { return strings.Contains(d.stdout.String(), `"msg":"sqs batch failed"`) }, 10*time.Second, 50*time.Millisecond)

	d.interrupt(t)
	select {
	case <-proc.Done():
		t.Fatal("the external SQS engine stopped with triggers-dev")
	default:
	}
	after, err := sqsc.ListQueues(ctx, &sqs.ListQueuesInput{})
	require.NoError(t, err)
	assert.ElementsMatch(t, list.QueueUrls, after.QueueUrls, "the queues stay")
}
