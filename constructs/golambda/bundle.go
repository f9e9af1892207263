package golambda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/internal/synth/modroot"
)

// Build settings of every function: Lambda's provided.al2023 runtime, a
// static binary named bootstrap, no RPC server (lambda.norpc),
// reproducible (trimpath, no VCS stamping) and stripped. Build adds the
// architecture (arm64 by default: Graviton), build tags and linker flags.
var (
	buildEnv   = []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}
	buildFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w"}
)

// Build is what may vary between functions' builds: the architecture,
// build tags and linker flags. The zero value is the default build:
// arm64, lambda.norpc only, -s -w only.
type Build struct {
	// GOARCH is "arm64" (Lambda's arm64 architecture; the default when
	// empty) or "amd64" (x86_64).
	GOARCH string
	// Tags are build tags added to lambda.norpc.
	Tags []string
	// Ldflags are linker flags added after -s -w, such as
	// "-X main.version=1.2.3".
	Ldflags string
}

// Validate reports a GOARCH Lambda cannot run or a build tag the go
// command would misread, naming the value and the fix.
func (b Build) Validate() error {
	var errs []error
	if b.GOARCH != "" && b.GOARCH != "arm64" && b.GOARCH != "amd64" {
		errs = append(errs, fmt.Errorf("GOARCH %q is not an architecture Lambda runs: use \"arm64\" (the default) or \"amd64\" (x86_64)", b.GOARCH))
	}
	for _, t := range b.Tags {
		if t == "" || strings.ContainsFunc(t, func(r rune) bool {
			return !(r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) {
			errs = append(errs, fmt.Errorf("build tag %q is not a tag go build accepts: use letters, digits, '_' and '.' only (one tag per element)", t))
		}
	}
	if strings.ContainsAny(b.Ldflags, "\n\r") {
		errs = append(errs, fmt.Errorf("Ldflags %q holds a line break: give the linker flags on one line", b.Ldflags))
	}
	return errors.Join(errs...)
}

func (b Build) goarch() string {
	if b.GOARCH == "" {
		return "arm64"
	}
	return b.GOARCH
}

// Env returns the environment variables the build runs with (GOOS=linux,
// GOARCH, CGO_ENABLED=0).
func (b Build) Env() []string {
	env := slices.Clone(buildEnv)
	env[1] = "GOARCH=" + b.goarch()
	return env
}

// tags returns the -tags value: lambda.norpc and b.Tags.
func (b Build) tags() string { return strings.Join(append([]string{"lambda.norpc"}, b.Tags...), ",") }

// flags returns the go build flags before -o.
func (b Build) flags() []string {
	f := slices.Clone(buildFlags)
	f[1] = b.tags()
	if b.Ldflags != "" {
		f[len(f)-1] += " " + b.Ldflags
	}
	return f
}

// Command returns the go build arguments that produce the bootstrap
// binary of entry into out, run in the module that resolves entry with
// Env. Entry is a directory relative to that module's root ("lambda/api")
// or an import path ("github.com/triggers-dev/triggers/lambda/api").
func (b Build) Command(entry, out string) []string {
	args := append([]string{"build"}, b.flags()...)
	return append(args, "-o", out, Pattern(entry))
}

// BuildEnv returns the environment variables every function is built with
// by default (GOOS=linux, GOARCH=arm64, CGO_ENABLED=0). Build prebuilt binaries (see
// GoFunctionProps.PrebuiltDir) with them and BuildCommand; Build's
// methods give the same for another architecture, tags or linker flags.
func BuildEnv() []string { return Build{}.Env() }

// BuildCommand returns the go build arguments of the default build
// (Build.Command of the zero Build).
func BuildCommand(entry, out string) []string { return Build{}.Command(entry, out) }

// Pattern returns the go command's package argument for entry: "./dir" for
// a directory in the module ("lambda/api", "./lambda/api"), entry itself
// for an import path. An entry whose first element holds a dot
// ("github.com/...", "example.com/...") is an import path; anything else is
// a directory.
func Pattern(entry string) string {
	if IsImportPath(entry) {
		return entry
	}
	p := filepath.ToSlash(filepath.Clean(entry))
	if p == ".." || strings.HasPrefix(p, "../") {
		return p
	}
	return "./" + p
}

// IsImportPath reports whether entry names a package by import path rather
// than by a directory of the caller's module: it does not start with "." or
// "/" and its first element holds a dot, as every module path that can be
// downloaded does ("github.com/triggers-dev/triggers/lambda/api").
func IsImportPath(entry string) bool {
	if entry == "" || strings.HasPrefix(entry, ".") || filepath.IsAbs(entry) || strings.Contains(entry, `\`) {
		return false
	}
	first, _, _ := strings.Cut(entry, "/")
	return strings.Contains(first, ".")
}

// localBundler implements awscdk.ILocalBundling with the Go toolchain on
// the synthesizing machine: no Docker.
type localBundler struct {
	moduleDir, entry string
	build            Build
}

// TryBundle builds the function into outputDir/bootstrap, running go build
// in the caller's module: nothing is written anywhere else (a dependency's
// directory, such as the read-only module cache, is only read). A build
// failure fails synthesis with the compiler's output.
func (b *localBundler) TryBundle(outputDir *string, _ *awscdk.BundlingOptions) *bool {
	cmd := exec.Command("go", b.build.Command(b.entry, filepath.Join(*outputDir, "bootstrap"))...)
	cmd.Dir = b.moduleDir
	cmd.Env = append(os.Environ(), b.build.Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		panic(fmt.Errorf("golambda: go build of %s in %s failed: %v\n%s", b.entry, b.moduleDir, err, out))
	}
	return jsii.Bool(true)
}

// listedModule is the part of go list's Module that the hash needs.
type listedModule struct {
	Path, Version, Dir string
	Main               bool
	Replace            *listedModule
}

// listedPackage is the part of go list -json's Package that the hash needs.
type listedPackage struct {
	ImportPath, Dir, Name               string
	Standard, DepOnly                   bool
	Module                              *listedModule
	GoFiles, EmbedFiles, SFiles, HFiles []string
	Error                               *struct{ Err string }
	DepsErrors                          []*struct{ Err string }
	Incomplete                          bool
}

// versionless reports whether m's code is not pinned by a version in
// go.sum: a main (or workspace) module, or one replaced by a directory.
func (m *listedModule) versionless() bool {
	if m.Main {
		return true
	}
	if m.Replace != nil {
		return m.Replace.Version == ""
	}
	return m.Version == ""
}

// SourceHash returns a hash of everything the function's binary depends on,
// with the packages resolved from moduleDir (the caller's module) for
// linux/arm64:
//
//   - the Go (and assembly, header, embedded) files of every imported package
//     that lives in moduleDir or in a module without a version: a workspace
//     module or a replace by a local directory (such as a checkout of this
//     repository), named by module path so that the hash does not depend on
//     where the directory is;
//   - go.mod and go.sum of moduleDir, go.work and go.work.sum when a
//     workspace is in use, and the go.mod of each versionless module: these
//     pin the version of every other module (the go command refuses to build
//     when go.mod does not list what it selects), so a module from the
//     module cache is identified by its path and version, never by its files;
//   - the Go version, the target platform and the build flags.
//
// It changes exactly when the binary may change, so unrelated edits (to CDK
// code, tests, docs) do not redeploy functions. Entry is a directory in
// moduleDir or an import path (see Pattern). An entry that is not a main
// package is an error.
func SourceHash(moduleDir, entry string) (string, error) { return Build{}.SourceHash(moduleDir, entry) }

// SourceHash is the package function SourceHash for this build: the
// architecture, tags and linker flags are hashed, and the packages are
// resolved for them (a tag or GOARCH selects files).
func (b Build) SourceHash(moduleDir, entry string) (string, error) {
	absModule, err := filepath.Abs(moduleDir)
	if err != nil {
		return "", err
	}
	pkgs, err := listDeps(absModule, entry, b)
	if err != nil {
		return "", err
	}
	env, err := goEnv(absModule, "GOVERSION", "GOWORK")
	if err != nil {
		return "", err
	}
	goVersion, gowork := env[0], env[1]

	// key returns the name a file is hashed under: its path relative to
	// moduleDir (stable across checkouts), or module path + path within
	// its module for another versionless module.
	inModule := func(p string) (string, bool) {
		rel, err := filepath.Rel(absModule, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", false
		}
		return filepath.ToSlash(rel), true
	}
	files := map[string]string{} // key -> absolute path
	var target *listedPackage
	for _, p := range pkgs {
		if !p.DepOnly {
			target = p
		}
		if p.Standard {
			continue
		}
		var prefix func(string) (string, bool)
		switch {
		case isUnder(absModule, p.Dir):
			prefix = inModule
		case p.Module != nil && p.Module.versionless() && p.Module.Dir != "":
			m := p.Module
			prefix = func(f string) (string, bool) {
				rel, err := filepath.Rel(m.Dir, f)
				if err != nil {
					return "", false
				}
				return path.Join(m.Path, filepath.ToSlash(rel)), true
			}
			if k, ok := prefix(filepath.Join(m.Dir, "go.mod")); ok {
				files[k] = filepath.Join(m.Dir, "go.mod")
			}
		default:
			continue // a module with a version: pinned by go.mod and go.sum
		}
		for _, list := range [][]string{p.GoFiles, p.EmbedFiles, p.SFiles, p.HFiles} {
			for _, n := range list {
				f := filepath.Join(p.Dir, n)
				if k, ok := prefix(f); ok {
					files[k] = f
				}
			}
		}
	}
	if target == nil {
		return "", fmt.Errorf("go list %s: no package", entry)
	}
	if target.Name != "main" {
		return "", fmt.Errorf("entry %s is package %s, not a main package: give the directory or import path of a Lambda function's main package", entry, target.Name)
	}
	files["go.mod"] = filepath.Join(absModule, "go.mod")
	files["go.sum"] = filepath.Join(absModule, "go.sum")
	if gowork != "" && gowork != "off" {
		files["@workspace/go.work"] = gowork
		files["@workspace/go.work.sum"] = gowork + ".sum"
	}
	// The entry as hashed: a directory of moduleDir in the form
	// "lambda/api" however it was written, else the import path.
	entryKey := target.ImportPath
	if k, ok := inModule(target.Dir); ok {
		entryKey = k
	}

	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	fmt.Fprintf(h, "golambda/v1\n%s\n%s\n%s\n%s\n", goVersion, entryKey, strings.Join(b.Env(), " "), strings.Join(b.flags(), " "))
	for _, k := range keys {
		f := files[k]
		fmt.Fprintf(h, "%s\n", k)
		fh, err := os.Open(f)
		if os.IsNotExist(err) && (strings.HasSuffix(f, ".sum")) {
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

// unbundledHash is the asset hash of entry's function in a stack whose
// assets are not bundled: a hash of the entry as go build would name it
// (Pattern), without running the go command. It is stable and differs
// between entries, and it is never the hash of a real asset: SourceHash
// hashes a different preamble.
func unbundledHash(entry string) string {
	h := sha256.Sum256([]byte("golambda/v1 unbundled\n" + Pattern(entry) + "\n"))
	return hex.EncodeToString(h[:])
}

// listDeps runs go list -deps -json on entry in moduleDir for the build's
// platform and tags.
func listDeps(moduleDir, entry string, b Build) ([]*listedPackage, error) {
	list := exec.Command("go", "list", "-deps", "-e",
		"-json=ImportPath,Dir,Name,Standard,DepOnly,Module,GoFiles,EmbedFiles,SFiles,HFiles,Error,DepsErrors,Incomplete",
		"-tags", b.tags(), Pattern(entry))
	list.Dir = moduleDir
	list.Env = append(os.Environ(), b.Env()...)
	var stderr bytes.Buffer
	list.Stderr = &stderr
	out, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s in %s: %v: %s", entry, moduleDir, err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []*listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := &listedPackage{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list %s: %w", entry, err)
		}
		pkgs = append(pkgs, p)
	}
	var errs []string
	for _, p := range pkgs {
		if p.Error != nil {
			errs = append(errs, p.Error.Err)
		}
		if !p.DepOnly {
			for _, e := range p.DepsErrors {
				errs = append(errs, e.Err)
			}
		}
	}
	if len(errs) > 0 {
		msg := strings.Join(errs, "; ")
		if IsImportPath(entry) && (strings.Contains(msg, "go.sum") || strings.Contains(msg, "go.mod") || strings.Contains(msg, "no required module")) {
			msg += fmt.Sprintf("; the function's dependencies must be in your module's go.mod and go.sum: run go mod edit -tool=%s && go mod tidy in %s (see examples/platform/go.mod)", entry, moduleDir)
		}
		return nil, fmt.Errorf("go list %s in %s: %s", entry, moduleDir, msg)
	}
	return pkgs, nil
}

// goEnv returns the values of go env vars, as seen from dir.
func goEnv(dir string, vars ...string) ([]string, error) {
	cmd := exec.Command("go", append([]string{"env"}, vars...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env %s: %w", strings.Join(vars, " "), err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(vars) {
		return nil, fmt.Errorf("go env %s: got %q", strings.Join(vars, " "), out)
	}
	return lines, nil
}

// isUnder reports whether p is dir or inside it.
func isUnder(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// ModuleRoot returns the directory holding go.mod, searching up from dir.
func ModuleRoot(dir string) (string, error) { return modroot.Find(dir) }
