package contract_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/triggers-dev/triggers/"

// devOrTest are the trees of local-only and test-only code
// (docs/layout.md). Code there may import anything; nothing outside them,
// cmd/ and _test.go files may import them.
var devOrTest = []string{module + "internal/dev/", module + "internal/testkit/"}

func inDevOrTest(path string) bool {
	return slices.ContainsFunc(devOrTest, func(tree string) bool { return strings.HasPrefix(path, tree) })
}

// listed is one line of `go list -f '{{.ImportPath}} {{join .X " "}}'`:
// a package and the packages it names (its imports or its dependencies).
type listed struct {
	path string
	uses []string
}

func goList(t *testing.T, format string, patterns ...string) []listed {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-f", format}, patterns...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", patterns, err, out)
	}
	var pkgs []listed
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			pkgs = append(pkgs, listed{path: f[0], uses: f[1:]})
		}
	}
	return pkgs
}

// downwardViolations lists, as "a -> b", each import by a package under
// internal/ (outside devOrTest) of a package in devOrTest. Imports from
// _test.go files are not in go list's .Imports, so tests may use them.
func downwardViolations(pkgs []listed) []string {
	var bad []string
	for _, p := range pkgs {
		if !strings.HasPrefix(p.path, module+"internal/") || inDevOrTest(p.path) {
			continue
		}
		for _, imp := range p.uses {
			if inDevOrTest(imp) {
				bad = append(bad, p.path+" -> "+imp)
			}
		}
	}
	return bad
}

// Runtime and shared packages under internal/ never import local-only or
// test-only code (internal/dev, internal/testkit): the arrows point from
// those trees to the runtime, never back.
func TestInternalImportsNoDevOrTestPackages(t *testing.T) {
	pkgs := goList(t, `{{.ImportPath}} {{join .Imports " "}}`, "../internal/...", "../cmd/...")
	if bad := downwardViolations(pkgs); len(bad) > 0 {
		t.Errorf("packages outside internal/dev and internal/testkit import them (move the code they need down, or the package into those trees):\n%s", strings.Join(bad, "\n"))
	}
	// The listing sees such imports: the local development server's does.
	i := slices.IndexFunc(pkgs, func(p listed) bool { return p.path == module+"cmd/triggers-dev" })
	if i < 0 || !slices.ContainsFunc(pkgs[i].uses, inDevOrTest) {
		t.Fatalf("go list shows no import of internal/dev by cmd/triggers-dev: the check reads the wrong listing")
	}
}

// The rule itself: an import of internal/dev or internal/testkit fails it
// from a runtime package, and is allowed inside those trees and from cmd/.
func TestDownwardViolations(t *testing.T) {
	pkgs := []listed{
		{module + "internal/ddb/ddblocal", []string{"os", module + "internal/dev/syncio"}},
		{module + "internal/store", []string{module + "internal/testkit/cdktest", module + "internal/ddb"}},
		{module + "internal/dev/devenv", []string{module + "internal/dev/localgw", module + "internal/testkit/lambdatest"}},
		{module + "internal/testkit/capacity", []string{module + "internal/dev/localapi"}},
		{module + "cmd/triggers-dev", []string{module + "internal/dev/devenv"}},
		{module + "internal/devices", []string{module + "internal/developer"}},
	}
	got := downwardViolations(pkgs)
	want := []string{
		module + "internal/ddb/ddblocal -> " + module + "internal/dev/syncio",
		module + "internal/store -> " + module + "internal/testkit/cdktest",
	}
	if !slices.Equal(got, want) {
		t.Errorf("downwardViolations() = %q, want %q", got, want)
	}
}

// family is the package family of an internal package: its first path
// element under internal/ (ddb for internal/ddb/ddbtest), or its first two
// in the trees that hold unrelated packages (dev/kmslocal).
func family(path string) string {
	rest := strings.Split(strings.TrimPrefix(path, module+"internal/"), "/")
	if len(rest) > 1 && slices.Contains([]string{"dev", "testkit", "synth"}, rest[0]) {
		return rest[0] + "/" + rest[1]
	}
	return rest[0]
}

// familyCycles lists, as "a -> b (p -> q)", each import from one family to
// another that leads back: b's packages, directly or not, import a's.
func familyCycles(pkgs []listed) []string {
	edges := map[string]map[string]bool{}
	first := map[[2]string]string{}
	for _, p := range pkgs {
		if !strings.HasPrefix(p.path, module+"internal/") {
			continue
		}
		a := family(p.path)
		for _, imp := range p.uses {
			if b := family(imp); strings.HasPrefix(imp, module+"internal/") && b != a {
				if edges[a] == nil {
					edges[a] = map[string]bool{}
				}
				edges[a][b] = true
				if _, ok := first[[2]string{a, b}]; !ok {
					first[[2]string{a, b}] = p.path + " -> " + imp
				}
			}
		}
	}
	reaches := func(from, to string) bool {
		seen := map[string]bool{from: true}
		for next := []string{from}; len(next) > 0; {
			f := next[0]
			next = next[1:]
			for g := range edges[f] {
				if g == to {
					return true
				}
				if !seen[g] {
					seen[g] = true
					next = append(next, g)
				}
			}
		}
		return false
	}
	var bad []string
	for a, bs := range edges {
		for b := range bs {
			if reaches(b, a) {
				bad = append(bad, a+" -> "+b+" ("+first[[2]string{a, b}]+")")
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// The families under internal/ form no cycle: a family's subpackages
// (ddb/ddbtest, webhook/dispatch) import only families below it, never
// one that imports the family back (ddb/ddbtest may not use awsenv, which
// uses ddb).
func TestInternalFamiliesFormNoCycle(t *testing.T) {
	if bad := familyCycles(goList(t, `{{.ImportPath}} {{join .Imports " "}}`, "../internal/...")); len(bad) > 0 {
		t.Errorf("package families import each other (move the code down, into a family both can use):\n%s", strings.Join(bad, "\n"))
	}
}

func TestFamilyCycles(t *testing.T) {
	in := module + "internal/"
	pkgs := []listed{
		{in + "ddb/ddbtest", []string{in + "ddb", in + "awsenv"}},
		{in + "awsenv", []string{in + "ddb"}},
		{in + "webhook/dispatch", []string{in + "webhook", in + "store"}},
		{in + "store", []string{in + "ddb"}},
		{in + "dev/devenv", []string{in + "dev/localgw"}},
		{in + "dev/localgw", []string{in + "store"}},
	}
	got := familyCycles(pkgs)
	want := []string{
		"awsenv -> ddb (" + in + "awsenv -> " + in + "ddb)",
		"ddb -> awsenv (" + in + "ddb/ddbtest -> " + in + "awsenv)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("familyCycles() = %q, want %q", got, want)
	}
	for path, want := range map[string]string{in + "ddb/ddbtest": "ddb", in + "ddb": "ddb", in + "dev/kmslocal/kmstest": "dev/kmslocal", in + "webhook/dispatch": "webhook"} {
		if got := family(path); got != want {
			t.Errorf("family(%q) = %q, want %q", path, got, want)
		}
	}
}

// No Lambda main under lambda/, present or future, links local-only or
// test-only code (lambda/closure_test.go checks the known functions'
// closures in more detail).
func TestLambdaMainsLinkNoDevOrTestPackages(t *testing.T) {
	mains := goList(t, `{{if eq .Name "main"}}{{.ImportPath}} {{join .Deps " "}}{{end}}`, "../lambda/...")
	if len(mains) < 5 {
		t.Fatalf("go list found %d Lambda mains under lambda/, want at least the 5 functions", len(mains))
	}
	for _, m := range mains {
		if !slices.Contains(m.uses, module+"internal/ddb") {
			t.Errorf("%s: its dependencies do not list internal/ddb: the check reads the wrong listing", m.path)
		}
		for _, d := range m.uses {
			if inDevOrTest(d) {
				t.Errorf("%s links %s, which is local-only or test-only", m.path, d)
			}
		}
	}
}
