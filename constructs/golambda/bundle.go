package golambda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// Build settings of every function: Lambda's provided.al2023 runtime on
// Graviton, a static binary named bootstrap, no RPC server (lambda.norpc),
// reproducible (trimpath, no VCS stamping) and stripped.
var (
	buildEnv   = []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}
	buildFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w"}
)

// BuildCommand returns the go build arguments that produce the bootstrap
// binary for the package entry (relative to the module root) into out.
func BuildCommand(entry, out string) []string {
	args := append([]string{"build"}, buildFlags...)
	return append(args, "-o", out, "./"+filepath.ToSlash(filepath.Clean(entry)))
}

// localBundler implements awscdk.ILocalBundling with the Go toolchain on
// the synthesizing machine: no Docker.
type localBundler struct {
	moduleDir, entry string
}

// TryBundle builds the function into outputDir/bootstrap. A build failure
// fails synthesis with the compiler's output.
func (b *localBundler) TryBundle(outputDir *string, _ *awscdk.BundlingOptions) *bool {
	cmd := exec.Command("go", BuildCommand(b.entry, filepath.Join(*outputDir, "bootstrap"))...)
	cmd.Dir = b.moduleDir
	cmd.Env = append(os.Environ(), buildEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		panic(fmt.Errorf("golambda: go build of %s failed: %v\n%s", b.entry, err, out))
	}
	return jsii.Bool(true)
}

// SourceHash returns a hash of everything the function's binary depends on:
// the Go files (and embedded files) of every package of this module that
// entry imports, transitively, for linux/arm64; go.mod and go.sum (which pin
// every other module); the Go version; and the build flags. It changes
// exactly when the binary may change, so unrelated edits (to CDK code, say)
// do not redeploy functions.
func SourceHash(moduleDir, entry string) (string, error) {
	list := exec.Command("go", "list", "-deps", "-f",
		`{{if not .Standard}}{{.Dir}}{{"\t"}}{{join .GoFiles " "}} {{join .EmbedFiles " "}}{{end}}`,
		"-tags", "lambda.norpc", "./"+filepath.ToSlash(filepath.Clean(entry)))
	list.Dir = moduleDir
	list.Env = append(os.Environ(), buildEnv...)
	var stderr bytes.Buffer
	list.Stderr = &stderr
	out, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %v: %s", entry, err, strings.TrimSpace(stderr.String()))
	}
	version, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	absModule, err := filepath.Abs(moduleDir)
	if err != nil {
		return "", err
	}
	var files []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		dir, names, ok := strings.Cut(line, "\t")
		if !ok || !strings.HasPrefix(dir, absModule+string(filepath.Separator)) {
			continue // a package of another module: pinned by go.sum
		}
		for _, n := range strings.Fields(names) {
			files = append(files, filepath.Join(dir, n))
		}
	}
	files = append(files, filepath.Join(absModule, "go.mod"), filepath.Join(absModule, "go.sum"))
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintf(h, "golambda/v1\n%s\n%s\n%s\n%s\n", strings.TrimSpace(string(version)), entry, strings.Join(buildEnv, " "), strings.Join(buildFlags, " "))
	for _, f := range files {
		rel, _ := filepath.Rel(absModule, f)
		fmt.Fprintf(h, "%s\n", filepath.ToSlash(rel))
		fh, err := os.Open(f)
		if os.IsNotExist(err) && filepath.Base(f) == "go.sum" {
			continue // a module without dependencies has no go.sum
		}
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ModuleRoot returns the directory holding go.mod, searching up from dir.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}
