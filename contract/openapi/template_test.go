package openapi

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// templateMethod is one AWS::ApiGateway::Method of a template.
type templateMethod struct {
	id, method, path, auth, integration string
}

// templateMethods reads the API Gateway methods of a synthesized template,
// each with its resource's full path.
func templateMethods(t *testing.T, file string) []templateMethod {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal(data, &tmpl); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	// A resource's parent is another resource (Ref) or the API's root
	// (Fn::GetAtt RootResourceId), whose path is "".
	var pathOf func(ref any) string
	pathOf = func(ref any) string {
		m, _ := ref.(map[string]any)
		id, ok := m["Ref"].(string)
		if !ok {
			return ""
		}
		r := tmpl.Resources[id]
		if r.Type != "AWS::ApiGateway::Resource" {
			t.Fatalf("%s: %s is a %s, not a resource", file, id, r.Type)
		}
		return pathOf(r.Properties["ParentId"]) + "/" + r.Properties["PathPart"].(string)
	}
	var out []templateMethod
	for id, r := range tmpl.Resources {
		if r.Type != "AWS::ApiGateway::Method" {
			continue
		}
		p := r.Properties
		path := pathOf(p["ResourceId"])
		if path == "" {
			path = "/"
		}
		integ, _ := p["Integration"].(map[string]any)
		typ, _ := integ["Type"].(string)
		auth, _ := p["AuthorizationType"].(string)
		out = append(out, templateMethod{id: id, method: p["HttpMethod"].(string), path: path, auth: auth, integration: typ})
	}
	return out
}

// The synthesized API templates (the golden snapshots, which assertions
// compares with every synthesis) have exactly the document's operations
// as methods, each invoking the API function (AWS_PROXY), with no
// authorizer exactly where the document's operation needs no security.
// Besides them, only an ANY per documented path (other methods reach the
// function, which answers 405: the document's x-other-method-responses)
// and, where CORS is configured, an OPTIONS preflight per resource (a
// MOCK integration without authorization) may exist.
func TestTemplateMethodsAreTheDocument(t *testing.T) {
	d := parsed(t)
	ops := map[string]bool{}
	public := map[string]bool{}
	paths := d["paths"].(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			key := strings.ToUpper(method) + " " + path
			ops[key] = true
			sec, has := op.(map[string]any)["security"]
			public[key] = has && len(asSlice(sec)) == 0
		}
	}
	for _, c := range []struct {
		file string
		cors bool
	}{
		{"../../assertions/testdata/triggers-dev-api.json", false},
		{"../../assertions/testdata/test-api-options.json", true},
	} {
		t.Run(c.file, func(t *testing.T) {
			seen := map[string]bool{}
			options := 0
			for _, m := range templateMethods(t, c.file) {
				key := m.method + " " + m.path
				switch {
				case m.method == "OPTIONS":
					options++
					if !c.cors || m.integration != "MOCK" || m.auth != "NONE" {
						t.Errorf("%s: %s: an OPTIONS method that is no CORS preflight (integration %s, authorization %s)", c.file, m.id, m.integration, m.auth)
					}
				case m.method == "ANY":
					if paths[m.path] == nil {
						t.Errorf("%s: %s: ANY on %s, a path the document does not have", c.file, m.id, m.path)
					}
					if m.auth != "CUSTOM" || m.integration != "AWS_PROXY" {
						t.Errorf("%s: %s: ANY %s with authorization %s and integration %s, want CUSTOM (405 after authentication) and AWS_PROXY", c.file, m.id, m.path, m.auth, m.integration)
					}
				default:
					seen[key] = true
					if !ops[key] {
						t.Errorf("%s: %s: the template has %s, which the document does not (add the route to contract.Routes() and its entry to operations())", c.file, m.id, key)
						continue
					}
					if want := map[bool]string{true: "NONE", false: "CUSTOM"}[public[key]]; m.auth != want {
						t.Errorf("%s: %s: %s has authorization %s; the document's security says %s", c.file, m.id, key, m.auth, want)
					}
					if m.integration != "AWS_PROXY" {
						t.Errorf("%s: %s: %s integration %s, want AWS_PROXY (the API function)", c.file, m.id, key, m.integration)
					}
				}
			}
			for key := range ops {
				if !seen[key] {
					t.Errorf("%s: the document has %s, which the template does not", c.file, key)
				}
			}
			if c.cors && options == 0 {
				t.Errorf("%s: no OPTIONS method: the CORS case checks nothing", c.file)
			}
			if len(seen) != len(ops) {
				t.Errorf("%s: %d of the document's %d operations in the template", c.file, len(seen), len(ops))
			}
			if !slices.ContainsFunc(templateMethods(t, c.file), func(m templateMethod) bool { return m.method == "ANY" }) {
				t.Errorf("%s: no ANY method: the check of other methods checks nothing", c.file)
			}
		})
	}
}
