// Package kmslocal starts and stops local-kms (github.com/nsmithuk/local-kms),
// a KMS-compatible engine that runs as a process on this machine, the way
// package ddblocal runs DynamoDB Local. Tests (through kmstest) and
// `make dev` (internal/dev/devenv) seal and open webhook signing secrets
// with it (internal/webhook/secretbox), so the same KMS calls, encryption
// contexts and error codes run locally as on AWS.
//
// local-kms is a Go program pinned in the tools module (tools/go.mod, a
// `tool` directive), outside this module's dependency graph. Binary builds
// it once into .cache/bin/ below the module root (`go build` in tools/,
// from the Go module proxy), named by its pinned version, so a new pin
// builds anew. No Docker, no download of a prebuilt binary.
//
// It listens on every interface (local-kms has no bind option), on a port
// it picks itself (PORT=0) and reports on its first lines, so there is no
// race for a free port. Its keys live in a leveldb folder: a temporary one
// removed by Stop, or Options.DataDir to keep keys across runs (make dev
// with DATA keeps the key that sealed the stored secrets).
package kmslocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/syncio"
	"github.com/triggers-dev/triggers/internal/synth/modroot"
)

// Module is the Go package of local-kms, pinned in tools/go.mod.
const Module = "github.com/nsmithuk/local-kms"

// ToolsDir is the tools module's folder below the module root.
const ToolsDir = "tools"

// StartTimeout bounds how long Start waits for local-kms to answer.
const StartTimeout = 60 * time.Second

// Region and AccountID are those of the keys local-kms makes (their ARNs
// carry them); Region is also the clients' (ddb.LocalRegion).
const (
	Region    = ddb.LocalRegion
	AccountID = "111122223333"
)

// ErrNotInstalled is wrapped by the errors of a missing or unbuildable
// local-kms binary.
var ErrNotInstalled = errors.New("local-kms is not installed")

// Options configure Start.
type Options struct {
	// DataDir keeps the keys across runs; it is created if missing.
	// Default: a temporary folder that Stop removes.
	DataDir string
	// Binary is the local-kms executable. Default: Binary's, built from
	// tools/go.mod when Install is set.
	Binary string
	// Install builds the binary when it is missing (tests and make dev
	// do). Default: false.
	Install bool
}

// Process is a running local-kms.
type Process struct {
	// Endpoint is the base URL, such as http://127.0.0.1:41234.
	Endpoint string
	// Port is the port it listens on.
	Port int
	// Client is a KMS client for Endpoint (NewClient).
	Client *kms.Client

	cmd     *exec.Cmd
	out     *syncio.Buffer
	done    chan struct{}
	once    sync.Once
	tempDir string
}

// startedLine is local-kms's line once it listens: "Local KMS started on
// 0.0.0.0:PORT".
var startedLine = regexp.MustCompile(`Local KMS started on [^ ]*:(\d+)`)

// Start starts local-kms and waits until it answers. Stop it with Stop.
// On Linux the process is also killed when this process dies, so nothing
// is left behind.
func Start(ctx context.Context, o Options) (*Process, error) {
	bin := o.Binary
	if bin == "" {
		root, err := ModuleRoot()
		if err != nil {
			return nil, err
		}
		if bin, err = Binary(ctx, root, o.Install); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotInstalled, bin, err)
	}
	p := &Process{done: make(chan struct{}), out: &syncio.Buffer{Max: 1 << 20}}
	dir := o.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "local-kms-*")
		if err != nil {
			return nil, fmt.Errorf("create the local-kms data folder: %w", err)
		}
		dir, p.tempDir = tmp, tmp
	} else {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, fmt.Errorf("create the local-kms data folder %s: %w", abs, err)
		}
		dir = abs
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	// Only what local-kms reads: PORT=0 lets it pick a free port; the
	// seed path names a file that does not exist (no seeding: keys are
	// made through the API).
	cmd.Env = []string{
		"PORT=0",
		"KMS_DATA_PATH=" + dir,
		"KMS_SEED_PATH=" + filepath.Join(dir, "no-seed.yaml"),
		"KMS_REGION=" + Region,
		"KMS_ACCOUNT_ID=" + AccountID,
		"PATH=" + os.Getenv("PATH"),
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		p.removeTemp()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		p.removeTemp()
		return nil, fmt.Errorf("start local-kms (%s): %w", bin, err)
	}
	pw.Close()
	p.cmd = cmd
	ports := make(chan int, 1)
	go func() {
		// Copy every line to the buffer; report the port once.
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.out.Write([]byte(line + "\n"))
			if m := startedLine.FindStringSubmatch(line); m != nil && !sent {
				n, _ := strconv.Atoi(m[1])
				ports <- n
				sent = true
			}
		}
		pr.Close()
	}()
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(ctx, ports); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Process) waitReady(ctx context.Context, ports <-chan int) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	select {
	case p.Port = <-ports:
	case <-p.done:
		return fmt.Errorf("local-kms exited before listening: %s", strings.TrimSpace(p.out.String()))
	case <-ctx.Done():
		return fmt.Errorf("local-kms did not report its port within %s (output: %s)", StartTimeout, strings.TrimSpace(p.out.String()))
	}
	p.Endpoint = "http://127.0.0.1:" + strconv.Itoa(p.Port)
	p.Client = NewClient(p.Endpoint)
	var lastErr error
	for {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := p.Client.ListKeys(actx, &kms.ListKeysInput{Limit: aws.Int32(1)}, func(o *kms.Options) {
			o.RetryMaxAttempts = 1
		})
		acancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("local-kms did not answer on %s within %s: %w (output: %s)", p.Endpoint, StartTimeout, lastErr, strings.TrimSpace(p.out.String()))
		case <-p.done:
			return fmt.Errorf("local-kms exited before answering: %s", strings.TrimSpace(p.out.String()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// NewClient returns a KMS client for the local-kms at endpoint, with the
// local configuration of the module's other local clients
// (ddb.LocalConfig: static credentials, Region, bounded attempts).
func NewClient(endpoint string, optFns ...func(*kms.Options)) *kms.Client {
	return kms.NewFromConfig(ddb.LocalConfig(ddb.Options{}), append([]func(*kms.Options){func(o *kms.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}

// EnsureKey returns the ARN of the symmetric key the alias names (such as
// "alias/triggers-dev-webhook-secrets"), creating the key and the alias
// when the alias is unknown: with Options.DataDir, a later run finds the
// same key.
func (p *Process) EnsureKey(ctx context.Context, alias string) (string, error) {
	if !strings.HasPrefix(alias, "alias/") {
		return "", fmt.Errorf("kmslocal: alias %q must start with alias/", alias)
	}
	d, err := p.Client.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(alias)})
	var nf *types.NotFoundException
	switch {
	case err == nil:
		return aws.ToString(d.KeyMetadata.Arn), nil
	case !errors.As(err, &nf):
		return "", fmt.Errorf("describe %s on local-kms: %w", alias, err)
	}
	k, err := p.Client.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("local key " + alias)})
	if err != nil {
		return "", fmt.Errorf("create a key on local-kms: %w", err)
	}
	if _, err := p.Client.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: k.KeyMetadata.KeyId}); err != nil {
		return "", fmt.Errorf("create %s on local-kms: %w", alias, err)
	}
	return aws.ToString(k.KeyMetadata.Arn), nil
}

// Pid returns local-kms's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Output returns what local-kms printed so far; useful in failures.
func (p *Process) Output() string { return p.out.String() }

// Stop stops local-kms and waits for it to exit (SIGTERM, then SIGKILL
// after a grace period), then removes its temporary data folder. Calling
// it again is a no-op.
func (p *Process) Stop() error {
	var err error
	p.once.Do(func() {
		defer p.removeTemp()
		if p.cmd == nil || p.cmd.Process == nil {
			return
		}
		terminate(p.cmd)
		select {
		case <-p.done:
			return
		case <-time.After(5 * time.Second):
		}
		killProcess(p.cmd)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			err = fmt.Errorf("local-kms (pid %d) did not exit within 30s of SIGKILL", p.cmd.Process.Pid)
		}
	})
	return err
}

func (p *Process) removeTemp() {
	if p.tempDir != "" {
		_ = os.RemoveAll(p.tempDir)
	}
}

// ModuleRoot returns the Triggers module's root: the nearest directory
// above the working directory that holds go.mod and tools/go.mod.
func ModuleRoot() (string, error) {
	root, err := modroot.FromWorkingDir(filepath.Join(ToolsDir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("%w: %v: run from the Triggers module, or pass the binary's path", ErrNotInstalled, err)
	}
	return root, nil
}

// requireLine matches local-kms's requirement in tools/go.mod.
var requireLine = regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(Module) + `\s+(v\S+)`)

// PinnedVersion returns the version of local-kms that root's tools/go.mod
// pins.
func PinnedVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, ToolsDir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	m := requireLine.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%w: %s/go.mod does not require %s", ErrNotInstalled, ToolsDir, Module)
	}
	return string(m[1]), nil
}

// Binary returns the path of the local-kms executable built from root's
// tools module: .cache/bin/local-kms@<pinned version>. When it is missing
// and install is set, it builds it first (`go build` in root/tools, one
// process at a time: test packages run in parallel).
func Binary(ctx context.Context, root string, install bool) (string, error) {
	version, err := PinnedVersion(root)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, ".cache", "bin", "local-kms@"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if !install {
		return "", fmt.Errorf("%w: %s is missing: build it with `cd %s && go build -o %s %s`", ErrNotInstalled, bin, ToolsDir, bin, Module)
	}
	unlock, err := lockFile(filepath.Join(root, ".cache", "local-kms-build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // another process built it meanwhile
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%w: building it needs the go command on PATH: %v", ErrNotInstalled, err)
	}
	tmp := bin + ".tmp"
	cmd := exec.CommandContext(ctx, gocmd, "build", "-trimpath", "-o", tmp, Module)
	cmd.Dir = filepath.Join(root, ToolsDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: go build %s in %s: %v\n%s", ErrNotInstalled, Module, cmd.Dir, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}
