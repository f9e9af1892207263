// Package openapi holds the OpenAPI 3.1 document of HTTP API v1
// (openapi.json, embedded) and the generator that writes it.
//
// The document's paths and methods are contract.Routes(): nothing else.
// What each operation takes and answers (parameters, request body,
// responses and their JSON Schema 2020-12 schemas) comes from one table,
// operations (operations.go), keyed by contract.Route; its tests fail
// naming any route without an entry and any entry that is no route, and
// when the committed openapi.json differs from what Generate writes
// (rewrite it with `go test ./contract/openapi -args -update`).
//
// The API function serves Document at GET /v1/openapi.json; the
// conformance suite validates every response it sees against it.
//
// It imports only package contract and the standard library, so the API
// function can link it without growing.
package openapi

import (
	"bytes"
	_ "embed" // the committed document
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/triggers-dev/triggers/contract"
)

//go:embed openapi.json
var document []byte

// Document returns the committed OpenAPI document (JSON), a new copy each
// call.
func Document() []byte { return bytes.Clone(document) }

// Version is the document's OpenAPI version.
const Version = "3.1.0"

// SchemaDialect is the JSON Schema dialect of the document's schemas.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// Names of the extensions at the document's root that say what a request
// matching no operation gets: UnknownPathResponses for a path that is no
// route's (404 before authentication), OtherMethodResponses for a route's
// path with a method it does not have (405 with Allow, after
// authentication). Each maps a status to a response, like an operation's
// responses.
const (
	UnknownPathResponses = "x-unknown-path-responses"
	OtherMethodResponses = "x-other-method-responses"
)

// The document's types, in the order their fields are written.
type (
	doc struct {
		OpenAPI           string                `json:"openapi"`
		Info              info                  `json:"info"`
		JSONSchemaDialect string                `json:"jsonSchemaDialect"`
		Servers           []server              `json:"servers"`
		Security          []map[string][]string `json:"security"`
		Tags              []tag                 `json:"tags"`
		Paths             map[string]*pathItem  `json:"paths"`
		Components        components            `json:"components"`
		UnknownPath       map[string]any        `json:"x-unknown-path-responses"`
		OtherMethod       map[string]any        `json:"x-other-method-responses"`
	}
	info struct {
		Title       string `json:"title"`
		Version     string `json:"version"`
		Summary     string `json:"summary"`
		Description string `json:"description"`
	}
	server struct {
		URL         string                    `json:"url"`
		Description string                    `json:"description"`
		Variables   map[string]serverVariable `json:"variables,omitempty"`
	}
	serverVariable struct {
		Default     string `json:"default"`
		Description string `json:"description"`
	}
	tag struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	pathItem struct {
		Parameters []any       `json:"parameters,omitempty"`
		Get        *operationJ `json:"get,omitempty"`
		Post       *operationJ `json:"post,omitempty"`
		Patch      *operationJ `json:"patch,omitempty"`
		Delete     *operationJ `json:"delete,omitempty"`
	}
	operationJ struct {
		OperationID string                 `json:"operationId"`
		Summary     string                 `json:"summary"`
		Description string                 `json:"description"`
		Tags        []string               `json:"tags"`
		Security    *[]map[string][]string `json:"security,omitempty"`
		Parameters  []any                  `json:"parameters,omitempty"`
		RequestBody *requestBody           `json:"requestBody,omitempty"`
		Responses   map[string]any         `json:"responses"`
	}
	requestBody struct {
		Required bool                 `json:"required"`
		Content  map[string]mediaType `json:"content"`
	}
	mediaType struct {
		Schema schema `json:"schema"`
	}
	responseJ struct {
		Description string               `json:"description"`
		Headers     map[string]any       `json:"headers,omitempty"`
		Content     map[string]mediaType `json:"content,omitempty"`
	}
	components struct {
		Schemas         map[string]schema    `json:"schemas"`
		Responses       map[string]responseJ `json:"responses"`
		Parameters      map[string]parameter `json:"parameters"`
		Headers         map[string]header    `json:"headers"`
		SecuritySchemes map[string]any       `json:"securitySchemes"`
	}
	header struct {
		Description string `json:"description"`
		Required    bool   `json:"required,omitempty"`
		Schema      schema `json:"schema"`
	}
)

// parameter is an OpenAPI parameter object.
type parameter struct {
	Name        string `json:"name"`
	In          string `json:"in"`
	Description string `json:"description"`
	Required    bool   `json:"required,omitempty"`
	Schema      schema `json:"schema"`
}

const jsonMedia = "application/json"

// Generate returns the OpenAPI document of contract.Routes() and the
// operations table, as openapi.json holds it (two-space indents, a
// trailing newline). It fails on a route without an operation, an
// operation that is no route, or a reference to an unknown component.
func Generate() ([]byte, error) {
	d, err := build()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	// Every character outside ASCII becomes a \u escape: the document stays
	// ASCII, and the invisible characters of the description pattern
	// (descriptionPattern) are seen in it.
	out := contract.EscapeJSON(b.Bytes(), func(r rune) bool { return r >= utf8.RuneSelf })
	if err := checkRefs(out); err != nil {
		return nil, err
	}
	return out, nil
}

// build assembles the document.
func build() (*doc, error) {
	ops := operations()
	if missing, extra := Coverage(ops); len(missing) > 0 || len(extra) > 0 {
		return nil, fmt.Errorf("openapi: the operations table and contract.Routes() differ: routes without an operation %v, operations that are no route %v", missing, extra)
	}
	d := &doc{
		OpenAPI:           Version,
		JSONSchemaDialect: SchemaDialect,
		Info: info{
			Title:   "Triggers HTTP API",
			Version: "v1",
			Summary: "Event ingestion, an inbox to poll, and webhook push delivery.",
			Description: "Events in, inbox out, webhooks pushed. Every response carries X-Request-Id; every error is " +
				`{"error":{"code","message","request_id"}}, API Gateway's own answers included. Request bodies are ` +
				"I-JSON (RFC 7493) of at most 256 KiB. See docs/api.md for the rules behind each field.",
		},
		Servers: []server{
			{
				URL: "https://{api}.execute-api.{region}.amazonaws.com/{stage}", Description: "an API Gateway stage (the stack's ApiUrl output)",
				Variables: map[string]serverVariable{
					"api":    {Default: "abcdef1234", Description: "the REST API's id"},
					"region": {Default: "eu-west-1", Description: "the stack's region"},
					"stage":  {Default: "live", Description: "the stage name (TriggersApiProps.StageName)"},
				},
			},
			{URL: "http://127.0.0.1:8080/live", Description: "make dev: the local gateway built from the synthesized template"},
		},
		Security: []map[string][]string{{"bearer": {}}, {"apiKeyHeader": {}}},
		Tags: []tag{
			{"events", "Ingestion and reading of events"},
			{"inbox", "Polling and acknowledging undelivered events"},
			{"webhooks", "Push delivery: subscriptions, attempts, redelivery (404 webhooks_disabled where the deployment has none)"},
			{"meta", "This document"},
		},
		Paths:       map[string]*pathItem{},
		Components:  componentsOf(),
		UnknownPath: map[string]any{"404": respRef("NotFound"), "429": respRef("Throttled")},
		OtherMethod: map[string]any{
			"401": respRef("Unauthorized"), "403": respRef("Forbidden"), "405": respRef("MethodNotAllowed"),
			"429": respRef("Throttled"), "503": respRef("Unavailable"),
		},
	}
	for _, r := range contract.Routes() {
		item := d.Paths[r.Path]
		if item == nil {
			item = &pathItem{}
			for _, p := range contract.PathParams(r.Path) {
				if _, ok := d.Components.Parameters[p]; !ok {
					return nil, fmt.Errorf("openapi: path parameter %q of %s has no entry in components.parameters (pathParameters)", p, r.Path)
				}
				item.Parameters = append(item.Parameters, map[string]string{"$ref": "#/components/parameters/" + p})
			}
			d.Paths[r.Path] = item
		}
		o, err := ops[r].render(r)
		if err != nil {
			return nil, err
		}
		switch r.Method {
		case contract.MethodGet:
			item.Get = o
		case contract.MethodPost:
			item.Post = o
		case contract.MethodPatch:
			item.Patch = o
		case contract.MethodDelete:
			item.Delete = o
		default:
			return nil, fmt.Errorf("openapi: route %s: method %s has no field in the path item", r, r.Method)
		}
	}
	return d, nil
}

// Coverage compares table's keys with contract.Routes(): the routes
// without an entry, and the entries that are no route, each as
// Route.String.
func Coverage[V any](table map[contract.Route]V) (missing, extra []string) {
	routes := contract.Routes()
	for _, r := range routes {
		if _, ok := table[r]; !ok {
			missing = append(missing, r.String())
		}
	}
	for _, r := range slices.SortedFunc(maps.Keys(table), func(a, b contract.Route) int { return strings.Compare(a.String(), b.String()) }) {
		if !slices.Contains(routes, r) {
			extra = append(extra, r.String())
		}
	}
	return missing, extra
}

// render writes o as the operation of route r: its own parameters and
// responses, and the ones every operation of its kind has.
func (o operation) render(r contract.Route) (*operationJ, error) {
	out := &operationJ{
		OperationID: o.id, Summary: o.summary, Description: o.description, Tags: []string{o.tag},
		Responses: map[string]any{},
	}
	if o.id == "" || o.summary == "" || o.tag == "" {
		return nil, fmt.Errorf("openapi: operation of %s needs an id, a summary and a tag", r)
	}
	if r.Public() {
		out.Security = &[]map[string][]string{}
	}
	out.Parameters = append(out.Parameters, map[string]string{"$ref": "#/components/parameters/X-Correlation-Id"})
	for _, p := range o.params {
		out.Parameters = append(out.Parameters, p)
	}
	if o.body != "" {
		out.RequestBody = &requestBody{Required: true, Content: map[string]mediaType{jsonMedia: {Schema: schemaRef(o.body)}}}
	}
	for status, res := range o.responses {
		if res.description == "" {
			return nil, fmt.Errorf("openapi: %s: response %d has no description", r, status)
		}
		rj := responseJ{Description: res.description, Headers: map[string]any{
			"X-Request-Id":     headerRef("X-Request-Id"),
			"X-Correlation-Id": headerRef("X-Correlation-Id"),
		}}
		for _, h := range res.headers {
			rj.Headers[h] = headerRef(h)
		}
		switch {
		case res.schema != "":
			rj.Content = map[string]mediaType{jsonMedia: {Schema: schemaRef(res.schema)}}
		case status >= 400:
			rj.Content = map[string]mediaType{jsonMedia: {Schema: schemaRef("Error")}}
		}
		out.Responses[strconv.Itoa(status)] = rj
	}
	// The answers every operation can get, from the function or from
	// API Gateway itself (its gateway responses share the error body).
	common := map[int]string{400: "BadRequest", 429: "Throttled", 500: "Internal"}
	if !r.Public() {
		common[401] = "Unauthorized"
		common[403] = "Forbidden"
		common[503] = "Unavailable"
	}
	if o.body != "" {
		common[413] = "PayloadTooLarge"
		common[415] = "UnsupportedMediaType"
	}
	for status, name := range common {
		if _, ok := out.Responses[strconv.Itoa(status)]; !ok {
			out.Responses[strconv.Itoa(status)] = respRef(name)
		}
	}
	return out, nil
}

func schemaRef(name string) schema { return schema{"$ref": "#/components/schemas/" + name} }
func respRef(name string) any      { return map[string]string{"$ref": "#/components/responses/" + name} }
func headerRef(name string) any    { return map[string]string{"$ref": "#/components/headers/" + name} }

// checkRefs fails on a "$ref" of the document that names nothing in it.
func checkRefs(data []byte) error {
	var root any
	if err := json.Unmarshal(data, &root); err != nil {
		return err
	}
	var bad []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if _, err := Resolve(root, ref); err != nil {
					bad = append(bad, ref)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(root)
	if len(bad) > 0 {
		return fmt.Errorf("openapi: references to nothing: %v", bad)
	}
	return nil
}

// Resolve returns the value a local reference ("#/components/schemas/Event",
// a JSON Pointer after '#') names in root, a decoded JSON document.
func Resolve(root any, ref string) (any, error) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("openapi: %q is not a local reference", ref)
	}
	v := root
	if ptr == "" {
		return v, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("openapi: %q is not a JSON Pointer", ref)
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("openapi: %q: no member %q", ref, tok)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("openapi: %q: no element %q", ref, tok)
			}
			v = c[i]
		default:
			return nil, fmt.Errorf("openapi: %q: %q inside a scalar", ref, tok)
		}
	}
	return v, nil
}
