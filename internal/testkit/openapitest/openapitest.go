// Package openapitest checks HTTP responses against an OpenAPI 3.1
// document (contract/openapi's): it finds the operation of a request
// (method and path against the document's path templates), the response
// the document lists for the status, and validates the headers the
// response must carry and its JSON body against the response's JSON
// Schema 2020-12 schema (github.com/santhosh-tekuri/jsonschema/v6).
//
// A request that matches no operation is checked against the document's
// root extensions openapi.UnknownPathResponses (a path that is no route's)
// and openapi.OtherMethodResponses (a route's path, another method).
package openapitest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/triggers-dev/triggers/contract/openapi"
)

// docURL is where the compiler keeps the document; nothing is fetched.
const docURL = "https://triggers.invalid/openapi.json"

// Validator checks responses against one document. It is safe for
// concurrent use.
type Validator struct {
	doc     map[string]any
	paths   []string // the document's path templates, literal ones first
	schemas map[string]*jsonschema.Schema

	mu   sync.Mutex
	seen map[string]int
}

// New compiles document: every component schema and every schema of a
// response or parameter. It fails on a document that is not OpenAPI 3.1 or
// on a schema that does not compile.
func New(document []byte) (*Validator, error) {
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(document))
	if err != nil {
		return nil, fmt.Errorf("openapitest: the document is not JSON: %w", err)
	}
	d, ok := raw.(map[string]any)
	if !ok || d["openapi"] != openapi.Version {
		return nil, fmt.Errorf("openapitest: not an OpenAPI %s document", openapi.Version)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, d); err != nil {
		return nil, err
	}
	v := &Validator{doc: d, schemas: map[string]*jsonschema.Schema{}, seen: map[string]int{}}
	// Every "schema" member anywhere in the document, and every
	// component schema.
	var ptrs []string
	var walk func(x any, ptr string)
	walk = func(x any, ptr string) {
		switch x := x.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				p := ptr + "/" + escape(k)
				if k == "schema" || ptr == "/components/schemas" {
					ptrs = append(ptrs, p)
					continue
				}
				walk(x[k], p)
			}
		case []any:
			for i, e := range x {
				walk(e, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(d, "")
	for _, p := range ptrs {
		s, err := c.Compile(docURL + "#" + p)
		if err != nil {
			return nil, fmt.Errorf("openapitest: schema at %s: %w", p, err)
		}
		v.schemas[p] = s
	}
	paths, _ := d["paths"].(map[string]any)
	v.paths = slices.Sorted(maps.Keys(paths))
	// Literal paths win over templates (/v1/events/batch is never
	// /v1/events/{event_id}).
	slices.SortStableFunc(v.paths, func(a, b string) int {
		return boolInt(strings.Contains(a, "{")) - boolInt(strings.Contains(b, "{"))
	})
	return v, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// Match returns the document's path template that target's path (any
// query string is ignored) fills, or "" when none does.
func (v *Validator) Match(target string) string {
	path, _, _ := strings.Cut(target, "?")
	segs := strings.Split(path, "/")
	for _, t := range v.paths {
		tsegs := strings.Split(t, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		ok := true
		for i, ts := range tsegs {
			param := len(ts) > 2 && ts[0] == '{' && ts[len(ts)-1] == '}'
			if param && segs[i] == "" || !param && ts != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return t
		}
	}
	return ""
}

// Check validates one response to method target (a path relative to the
// API's base, with or without its query string): the document must list
// status for the request's operation, the response must carry the
// headers that response requires (each value valid against its schema),
// and its body must be JSON valid against the response's schema (with
// Content-Type application/json), or empty when the response has none.
// It returns the operation ("POST /v1/events", or the root extension
// used) with the error.
func (v *Validator) Check(method, target string, status int, header http.Header, body []byte) (string, error) {
	op, responses, ptr, err := v.responses(method, target)
	if err != nil {
		return op, err
	}
	code := strconv.Itoa(status)
	res, ok := responses[code]
	if !ok {
		return op, fmt.Errorf("%s answered %d, a status the document does not list (it lists %s)", op, status, strings.Join(slices.Sorted(maps.Keys(responses)), ", "))
	}
	resPtr := ptr + "/" + code
	resObj, resPtr, err := v.deref(res, resPtr)
	if err != nil {
		return op, err
	}
	var errs []error
	headers, _ := resObj["headers"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		h, hPtr, err := v.deref(headers[name], resPtr+"/headers/"+escape(name))
		if err != nil {
			return op, err
		}
		vals := header.Values(name)
		if len(vals) == 0 {
			if h["required"] == true {
				errs = append(errs, fmt.Errorf("no %s header", name))
			}
			continue
		}
		if s := v.schemas[hPtr+"/schema"]; s != nil {
			for _, val := range vals {
				if err := s.Validate(val); err != nil {
					errs = append(errs, fmt.Errorf("header %s %q: %w", name, val, err))
				}
			}
		}
	}
	content, _ := resObj["content"].(map[string]any)
	switch {
	case content == nil:
		if len(bytes.TrimSpace(body)) > 0 {
			errs = append(errs, fmt.Errorf("a body, where the document says none: %.200s", body))
		}
	case content["application/json"] == nil:
		errs = append(errs, fmt.Errorf("the document's response has no application/json content (it has %v)", slices.Sorted(maps.Keys(content))))
	default:
		if mt, _, err := mime.ParseMediaType(header.Get("Content-Type")); err != nil || mt != "application/json" {
			errs = append(errs, fmt.Errorf("Content-Type %q, want application/json", header.Get("Content-Type")))
		}
		s := v.schemas[resPtr+"/content/application~1json/schema"]
		if s == nil {
			return op, fmt.Errorf("openapitest: no compiled schema at %s/content/application~1json/schema", resPtr)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			errs = append(errs, fmt.Errorf("the body is not JSON (%v): %.200s", err, body))
		} else if err := s.Validate(inst); err != nil {
			errs = append(errs, fmt.Errorf("the body does not match the schema at #%s/content/application~1json/schema: %w\nbody: %.500s", resPtr, err, body))
		}
	}
	if len(errs) > 0 {
		return op, fmt.Errorf("%s answered %d, unlike the document: %w", op, status, errors.Join(errs...))
	}
	v.mu.Lock()
	v.seen[op+" "+code]++
	v.mu.Unlock()
	return op, nil
}

// responses returns the responses the document gives method target and
// the JSON Pointer of that map.
func (v *Validator) responses(method, target string) (op string, responses map[string]any, ptr string, err error) {
	path := v.Match(target)
	if path == "" {
		ext, _ := v.doc[openapi.UnknownPathResponses].(map[string]any)
		return openapi.UnknownPathResponses, ext, "/" + openapi.UnknownPathResponses, nil
	}
	item := v.doc["paths"].(map[string]any)[path].(map[string]any)
	o, ok := item[strings.ToLower(method)].(map[string]any)
	if !ok {
		ext, _ := v.doc[openapi.OtherMethodResponses].(map[string]any)
		return openapi.OtherMethodResponses + " (" + method + " " + path + ")", ext, "/" + openapi.OtherMethodResponses, nil
	}
	responses, _ = o["responses"].(map[string]any)
	return method + " " + path, responses, "/paths/" + escape(path) + "/" + strings.ToLower(method) + "/responses", nil
}

// deref follows x's "$ref" (at most a few times) and returns the object
// and its JSON Pointer.
func (v *Validator) deref(x any, ptr string) (map[string]any, string, error) {
	for range 5 {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, ptr, fmt.Errorf("openapitest: #%s is not an object", ptr)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, ptr, nil
		}
		next, err := openapi.Resolve(v.doc, ref)
		if err != nil {
			return nil, ptr, err
		}
		x, ptr = next, strings.TrimPrefix(ref, "#")
	}
	return nil, ptr, fmt.Errorf("openapitest: #%s: references nest too deeply", ptr)
}

// Seen returns how many responses Check accepted, by operation and
// status ("GET /v1/inbox 200").
func (v *Validator) Seen() map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.seen)
}
