package contract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPublicPackagesExportNoMutableVars parses the packages other teams
// import (contract, schema, stacks and constructs/..., not
// constructs/internal) and fails on any exported package-level var that is
// not an error. An exported slice, map or pointer is shared by every
// importer: one of them changing it changes every other's grants, routes
// or templates. Export a func that returns a new copy instead (or a
// const). Sentinel errors (errors.New, fmt.Errorf or a var of type error)
// are allowed.
func TestPublicPackagesExportNoMutableVars(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{.Dir}}|{{join .GoFiles \"|\"}}",
		"../contract", "../schema", "../stacks", "../constructs/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	pkgs, files := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if strings.Contains(f[0], "/constructs/internal/") || strings.HasSuffix(f[0], "/constructs/internal") {
			continue
		}
		pkgs++
		for _, name := range f[2:] {
			path := filepath.Join(f[1], name)
			file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			files++
			for _, m := range mutableExportedVars(fset, file) {
				t.Errorf("%s: make it a func that returns a new copy (or a const): any importer can change it for every other", m)
			}
		}
	}
	// contract, schema, stacks, archive, dynamotable, eventstore, golambda,
	// monitoring, triggersapi.
	if pkgs < 9 || files < 20 {
		t.Fatalf("parsed %d packages, %d files: go list found too few (output %q)", pkgs, files, out)
	}
}

// TestMutableExportedVars checks the check: it flags exported slices, maps,
// pointers and other non-error vars, and allows errors and unexported vars.
func TestMutableExportedVars(t *testing.T) {
	const src = `package p

import ("errors"; "fmt")

var Slice = []string{"a"}
var Map = map[string]string{}
var Ptr = &T{}
var Typed []Route
var Alias = other.Slice
var (
	Made = make(map[string]int)
	ErrA = errors.New("a")
	ErrB = fmt.Errorf("b")
	ErrC error
	unexported = []string{"b"}
	_ = []string{"c"}
)
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range mutableExportedVars(fset, file) {
		got = append(got, m[strings.Index(m, "var ")+4:strings.Index(m, " (")])
	}
	want := []string{"Slice", "Map", "Ptr", "Typed", "Alias", "Made"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("mutableExportedVars flags %v, want %v", got, want)
	}
}

// mutableExportedVars describes each exported package-level var of file
// that is not an error, as "file:line: exported var Name (kind)".
func mutableExportedVars(fset *token.FileSet, file *ast.File) []string {
	var out []string
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !n.IsExported() {
					continue
				}
				var value ast.Expr
				if len(vs.Values) == len(vs.Names) {
					value = vs.Values[i]
				}
				if kind := varKind(vs.Type, value); kind != "" {
					out = append(out, fset.Position(n.Pos()).String()+": exported var "+n.Name+" ("+kind+")")
				}
			}
		}
	}
	return out
}

// varKind returns "" for an error var, else what the var is.
func varKind(typ, value ast.Expr) string {
	if typ != nil {
		if id, ok := typ.(*ast.Ident); ok && id.Name == "error" {
			return ""
		}
		return typeKind(typ)
	}
	switch v := value.(type) {
	case *ast.CallExpr:
		switch fn := v.Fun.(type) {
		case *ast.SelectorExpr:
			if x, ok := fn.X.(*ast.Ident); ok && (x.Name == "errors" && fn.Sel.Name == "New" || x.Name == "fmt" && fn.Sel.Name == "Errorf") {
				return ""
			}
		case *ast.Ident:
			if (fn.Name == "make" || fn.Name == "new") && len(v.Args) > 0 {
				if fn.Name == "new" {
					return "pointer"
				}
				return typeKind(v.Args[0])
			}
		}
		return "value of a call"
	case *ast.CompositeLit:
		return typeKind(v.Type)
	case *ast.UnaryExpr:
		if v.Op == token.AND {
			return "pointer"
		}
	case *ast.FuncLit:
		return "func"
	}
	return "type not evident"
}

func typeKind(typ ast.Expr) string {
	switch t := typ.(type) {
	case *ast.ArrayType:
		if t.Len == nil {
			return "slice"
		}
		return "array"
	case *ast.MapType:
		return "map"
	case *ast.StarExpr:
		return "pointer"
	case *ast.FuncType:
		return "func"
	case *ast.ChanType:
		return "chan"
	}
	return "var"
}
