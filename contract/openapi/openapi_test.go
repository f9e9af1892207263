package openapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/triggers-dev/triggers/contract"
)

var update = flag.Bool("update", false, "rewrite openapi.json from the generator")

// The committed openapi.json (and so the embedded Document) is exactly
// what Generate writes: change the table or the schemas, then rerun with
// -update and review the diff.
func TestDocumentIsCurrent(t *testing.T) {
	got, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("openapi.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote openapi.json (%d bytes): rebuild to embed it", len(got))
		return
	}
	onDisk, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, have := range map[string][]byte{"openapi.json": onDisk, "the embedded Document()": Document()} {
		if !bytes.Equal(have, got) {
			t.Errorf("%s differs from what Generate writes, first at %s: run `go test ./contract/openapi -args -update` and review the diff", name, firstDiff(have, got))
		}
	}
}

// firstDiff describes the first line where a and b differ.
func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: have %q, generated %q", i+1, x, y)
		}
	}
	return "nowhere"
}

// Every route of contract.Routes() has its entry in the operations table,
// and every entry is a route.
func TestOperationsCoverRoutes(t *testing.T) {
	missing, extra := Coverage(operations())
	for _, r := range missing {
		t.Errorf("route %s has no entry in operations() (contract/openapi/operations.go): add one, then rerun with -update", r)
	}
	for _, r := range extra {
		t.Errorf("operations() has an entry for %s, which is no route of contract.Routes(): remove it", r)
	}
}

// Coverage names what is missing and what is extra.
func TestCoverage(t *testing.T) {
	routes := contract.Routes()
	table := map[contract.Route]int{}
	for _, r := range routes[1:] {
		table[r] = 1
	}
	table[contract.Route{Method: "PUT", Path: "/v1/nope"}] = 1
	missing, extra := Coverage(table)
	if !slices.Equal(missing, []string{routes[0].String()}) || !slices.Equal(extra, []string{"PUT /v1/nope"}) {
		t.Errorf("Coverage() = %q, %q; want %q, %q", missing, extra, []string{routes[0].String()}, []string{"PUT /v1/nope"})
	}
	if _, err := build(); err != nil {
		t.Errorf("build() with the real table: %v", err)
	}
}

// parsed is the committed document decoded.
func parsed(t *testing.T) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(Document(), &d); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return d
}

// The document's operations are exactly contract.Routes(): each with its
// path parameters declared and required, public exactly when the route is
// Public, every status a three-digit code with a description.
func TestDocumentOperationsAreTheRoutes(t *testing.T) {
	d := parsed(t)
	if d["openapi"] != Version || d["jsonSchemaDialect"] != SchemaDialect {
		t.Errorf("openapi %v, jsonSchemaDialect %v; want %s, %s", d["openapi"], d["jsonSchemaDialect"], Version, SchemaDialect)
	}
	var got []string
	ids := map[string]string{}
	for path, item := range d["paths"].(map[string]any) {
		item := item.(map[string]any)
		var params []string
		for _, p := range asSlice(item["parameters"]) {
			v, err := Resolve(d, p.(map[string]any)["$ref"].(string))
			if err != nil {
				t.Fatal(err)
			}
			pm := v.(map[string]any)
			if pm["in"] != "path" || pm["required"] != true {
				t.Errorf("%s: parameter %v is not a required path parameter", path, pm)
			}
			params = append(params, pm["name"].(string))
		}
		if !slices.Equal(params, contract.PathParams(path)) {
			t.Errorf("%s: path parameters %v, want %v", path, params, contract.PathParams(path))
		}
		for method, op := range item {
			if method == "parameters" {
				continue
			}
			r := contract.Route{Method: strings.ToUpper(method), Path: path}
			got = append(got, r.String())
			op := op.(map[string]any)
			id := op["operationId"].(string)
			if other, ok := ids[id]; ok {
				t.Errorf("operationId %s is both %s's and %s's", id, other, r)
			}
			ids[id] = r.String()
			sec, hasSec := op["security"]
			if public := hasSec && len(asSlice(sec)) == 0; public != r.Public() {
				t.Errorf("%s: security %v, but Public() = %v", r, sec, r.Public())
			}
			for status, res := range op["responses"].(map[string]any) {
				if len(status) != 3 || status[0] < '1' || status[0] > '5' {
					t.Errorf("%s: response %q is not a status code", r, status)
				}
				if ref, ok := res.(map[string]any)["$ref"].(string); ok {
					if _, err := Resolve(d, ref); err != nil {
						t.Error(err)
					}
				} else if res.(map[string]any)["description"] == "" {
					t.Errorf("%s: response %s has no description", r, status)
				}
			}
		}
	}
	var want []string
	for _, r := range contract.Routes() {
		want = append(want, r.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the document's operations are %q, want contract.Routes() %q", got, want)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// Resolve follows local references and refuses anything else.
func TestResolve(t *testing.T) {
	root := map[string]any{"a/b": map[string]any{"c~d": []any{"x", "y"}}}
	for ref, want := range map[string]any{"#/a~1b/c~0d/1": "y", "#": root} {
		got, err := Resolve(root, ref)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Resolve(%q) = %v, %v; want %v", ref, got, err, want)
		}
	}
	for _, ref := range []string{"other.json#/a", "#a", "#/nope", "#/a~1b/c~0d/2", "#/a~1b/c~0d/0/x"} {
		if _, err := Resolve(root, ref); err == nil {
			t.Errorf("Resolve(%q) = nil error, want one", ref)
		}
	}
}

// A reference to nothing fails the generator.
func TestCheckRefs(t *testing.T) {
	if err := checkRefs([]byte(`{"components":{"schemas":{"A":{"type":"string"}}},"x":{"$ref":"#/components/schemas/A"}}`)); err != nil {
		t.Errorf("checkRefs(valid) = %v", err)
	}
	err := checkRefs([]byte(`{"components":{"schemas":{}},"x":{"$ref":"#/components/schemas/Missing"}}`))
	if err == nil || !strings.Contains(err.Error(), "#/components/schemas/Missing") {
		t.Errorf("checkRefs(dangling) = %v, want an error naming the reference", err)
	}
}

// The description pattern of the subscription requests, as the committed
// document holds it, refuses exactly the characters
// contract.DescriptionRefusal refuses (control characters, bidirectional
// controls, line and paragraph separators, invisible format characters),
// the rule the API applies (event.ParseSubscription), and lets every
// other character through, the joiners of emoji sequences and of the
// Indic scripts included. The document is ASCII: the pattern's invisible
// characters are \u escapes in it.
func TestDescriptionPatternIsTheRule(t *testing.T) {
	for i, c := range Document() {
		if c >= utf8.RuneSelf {
			t.Fatalf("openapi.json holds the byte %#x at %d, outside ASCII: Generate escapes every such character", c, i)
		}
	}
	var patterns []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if p, ok := v["pattern"].(string); ok && strings.Contains(p, `\x00-\x1f`) {
				patterns = append(patterns, p)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(parsed(t))
	if len(patterns) != 2 || patterns[0] != descriptionPattern() || patterns[1] != descriptionPattern() {
		t.Fatalf("the document's description patterns = %q, want descriptionPattern() twice (create and patch)", patterns)
	}
	re := regexp.MustCompile(patterns[0])
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if got, want := re.MatchString("a"+string(r)+"b"), contract.DescriptionRefusal(r) == ""; got != want {
			t.Errorf("pattern matches %U = %v, want %v", r, got, want)
		}
	}
	for _, s := range []string{"", "billing é 日本", "👨\u200d👩\u200d👧\u200d👦", "क्\u200dष", "می\u200cخواهم", "שלום", "مرحبا", "1\ufe0f\u20e3", "\u0600\u0661"} {
		if !re.MatchString(s) {
			t.Errorf("pattern refuses %+q", s)
		}
	}
	for _, s := range []string{"a\u202eb", "\u2066x\u2069", "x\u200by", "\ufeff", "a\u2028b", "\U000e0041"} {
		if re.MatchString(s) {
			t.Errorf("pattern accepts %+q", s)
		}
	}
}
