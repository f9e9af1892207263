package contract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sideEffectPackages are imported for their init alone (blank imports),
// which is what their package comments say.
var sideEffectPackages = []string{
	module + "internal/synth/jsiienv",
	module + "internal/testkit/cdktest/skipvalidation",
}

// No package of the module has a func init, save the two imported for
// theirs: what a package does happens when its caller calls it, not
// because some other package was linked (a table construct once got its
// builder from dynamotable's init).
func TestNoInitFuncs(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{.Dir}}|{{join .GoFiles \"|\"}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	var files int
	var withInit []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		for _, name := range f[2:] {
			if name == "" {
				continue
			}
			path := filepath.Join(f[1], name)
			file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			files++
			if hasInit(file) {
				withInit = append(withInit, f[0])
				if !slices.Contains(sideEffectPackages, f[0]) {
					t.Errorf("%s has a func init: make what it does an explicit call", path)
				}
			}
		}
	}
	if files < 100 {
		t.Fatalf("parsed %d files: go list found too few", files)
	}
	// The check sees init funcs: the side-effect packages have theirs.
	for _, p := range sideEffectPackages {
		if !slices.Contains(withInit, p) {
			t.Errorf("no func init found in %s, which is imported for it", p)
		}
	}
}

func hasInit(f *ast.File) bool {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
			return true
		}
	}
	return false
}
