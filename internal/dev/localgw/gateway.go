// Package localgw emulates an Amazon API Gateway REST API (v1) locally,
// built from a synthesized CloudFormation template: its resource tree and
// methods, Lambda REQUEST authorizers with their result cache, request
// parameter validation, gateway responses, stage and base path mapping,
// stage throttling, payload limits, and the Lambda proxy integration's
// event and response mapping. It invokes Lambda handlers in process,
// through their Lambda entry points (the aws-lambda-go event types), so
// local development and tests see what the deployed API does.
//
// Nothing is hard-coded to one stack: the caller maps each
// AWS::Lambda::Function the API uses to a handler (Options.Authorizer,
// Options.Proxy). docs/local-gateway.md lists each emulated behaviour
// with the AWS documentation it follows, and the known differences.
package localgw

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Limits API Gateway and Lambda enforce, as documented by AWS.
const (
	// MaxRequestBytes is API Gateway's REST API payload limit (10 MB):
	// a larger request body is a REQUEST_TOO_LARGE gateway response.
	MaxRequestBytes = 10 << 20
	// MaxInvokeRequestBytes is Lambda's synchronous invocation request
	// limit (6 MB) on the JSON event.
	MaxInvokeRequestBytes = 6 << 20
	// MaxInvokeResponseBytes is Lambda's synchronous invocation response
	// limit on the JSON response (6 MB plus 100 bytes).
	MaxInvokeResponseBytes = 6<<20 + 100
	// MaxIntegrationTimeout is API Gateway's default integration timeout.
	MaxIntegrationTimeout = 29 * time.Second
)

// AuthorizerFunc is the Lambda handler of a REQUEST authorizer. A
// func of the same signature (such as apigw.AuthorizerHandler)
// is assignable to it.
type AuthorizerFunc = func(context.Context, events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error)

// ProxyFunc is the Lambda handler of a REST API proxy integration
// (AWS_PROXY). A func of the same signature (such as
// apigw.ProxyHandler) is assignable to it.
type ProxyFunc = func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// Function describes one AWS::Lambda::Function of the template, as given
// to the resolvers in Options.
type Function struct {
	// LogicalID is the function's logical id in the template.
	LogicalID string
	// Description is Properties.Description, if a literal string.
	Description string
	// Environment is Properties.Environment.Variables as written in the
	// template: literal strings, or intrinsic functions (maps) that only
	// CloudFormation resolves.
	Environment map[string]any
	// Timeout is Properties.Timeout (Lambda's default, 3 s, if absent).
	// The handler's context has this deadline, as in Lambda.
	Timeout time.Duration
	// Properties are all the function's properties, as in the template.
	Properties map[string]any
}

// CustomDomain describes a custom domain name's base path mapping to the
// stage: requests arrive at /{BasePath}/... instead of /{stage}/..., and
// the proxy event's path includes the base path (its resource does not).
type CustomDomain struct {
	// DomainName is the custom domain (requestContext.domainName).
	// Default: the request's Host.
	DomainName string
	// BasePath is the mapping's base path, without slashes at either
	// end; it may have several levels (a/b). "" is the "(none)" mapping:
	// the API at the domain's root.
	BasePath string
}

// Options configure a Gateway. Authorizer and Proxy are required when the
// template has authorizers or proxy integrations.
type Options struct {
	// Authorizer returns the handler of a function that a REQUEST
	// authorizer's AuthorizerUri invokes. It is called once per function,
	// by New.
	Authorizer func(fn Function) (AuthorizerFunc, error)
	// Proxy returns the handler of a function that an AWS_PROXY
	// integration's Uri invokes. It is called once per function, by New.
	Proxy func(fn Function) (ProxyFunc, error)
	// RestAPI is the logical id of the AWS::ApiGateway::RestApi to serve.
	// Default: the template's only one.
	RestAPI string
	// Stage is the stage to serve. Default: the API's only stage.
	Stage string
	// CustomDomain, if set, serves the stage through a base path mapping
	// instead of at /{stage}/.
	CustomDomain *CustomDomain
	// Region, AccountID and APIID go into method ARNs and request
	// contexts. Default: us-east-1, 123456789012, and a 10-character id
	// derived from the RestApi's logical id.
	Region, AccountID, APIID string
	// StageVariables replace the stage's Variables from the template.
	StageVariables map[string]string
	// Now is the clock of the authorizer cache, throttling and request
	// times. Default: time.Now.
	Now func() time.Time
	// NewRequestID returns a request id. Default: a random UUID.
	NewRequestID func() string
	// Logger receives one line per request. Default: none.
	Logger *slog.Logger
	// DisableThrottling turns off the stage's throttling limits.
	DisableThrottling bool
}

// Route is one method of the API as the Gateway serves it.
type Route struct {
	// Method is the HTTP method, or ANY.
	Method string
	// Path is the resource path, such as /v1/events/{event_id}.
	Path string
	// Authorizer is the logical id of the method's authorizer, or "".
	Authorizer string
	// Integration is AWS_PROXY or MOCK.
	Integration string
	// Function is the logical id of an AWS_PROXY integration's function.
	Function string
}

// Gateway is an http.Handler that behaves like one stage of an API
// Gateway REST API. It is safe for concurrent use.
type Gateway struct {
	api         *api
	authorizers map[string]AuthorizerFunc
	proxies     map[string]ProxyFunc
	domain      *CustomDomain
	basePath    []string
	region      string
	account     string
	apiID       string
	stageVars   map[string]string
	now         func() time.Time
	newID       func() string
	log         *slog.Logger

	cacheMu sync.Mutex
	cache   map[string]cacheEntry

	throttleMu sync.Mutex
	tokens     float64
	lastFill   time.Time
	throttle   *throttleSettings
}

// New builds a Gateway from a synthesized template (JSON). It fails if the
// template uses an API Gateway feature the package does not emulate, or a
// function the resolvers do not map to a handler.
func New(template []byte, opts Options) (*Gateway, error) {
	a, err := parseTemplate(template, opts.RestAPI, opts.Stage)
	if err != nil {
		return nil, err
	}
	g := &Gateway{
		api:         a,
		authorizers: map[string]AuthorizerFunc{},
		proxies:     map[string]ProxyFunc{},
		domain:      opts.CustomDomain,
		region:      or(opts.Region, "us-east-1"),
		account:     or(opts.AccountID, "123456789012"),
		apiID:       opts.APIID,
		stageVars:   a.stageVariables,
		now:         opts.Now,
		newID:       opts.NewRequestID,
		log:         opts.Logger,
		cache:       map[string]cacheEntry{},
	}
	if g.apiID == "" {
		sum := sha256.Sum256([]byte(a.logicalID))
		g.apiID = hex.EncodeToString(sum[:])[:10]
	}
	if opts.StageVariables != nil {
		g.stageVars = opts.StageVariables
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.newID == nil {
		g.newID = newUUID
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.domain != nil {
		bp := strings.Trim(g.domain.BasePath, "/")
		if bp != "" {
			g.basePath = strings.Split(bp, "/")
		}
	}
	if a.throttle != nil && !opts.DisableThrottling {
		g.throttle = a.throttle
		g.tokens = a.throttle.burst
	}
	for _, id := range sortedKeys(a.authorizers) {
		fn := a.authorizers[id].function
		if _, done := g.authorizers[fn]; done {
			continue
		}
		if opts.Authorizer == nil {
			return nil, fmt.Errorf("localgw: authorizer %s invokes function %s: set Options.Authorizer", id, fn)
		}
		h, err := opts.Authorizer(a.functions[fn])
		if err != nil {
			return nil, fmt.Errorf("localgw: function %s (authorizer %s): %w", fn, id, err)
		}
		if h == nil {
			return nil, fmt.Errorf("localgw: Options.Authorizer returned no handler for function %s (authorizer %s)", fn, id)
		}
		g.authorizers[fn] = h
	}
	for _, rt := range g.Routes() {
		if rt.Function == "" {
			continue
		}
		if _, done := g.proxies[rt.Function]; done {
			continue
		}
		if opts.Proxy == nil {
			return nil, fmt.Errorf("localgw: %s %s invokes function %s: set Options.Proxy", rt.Method, rt.Path, rt.Function)
		}
		h, err := opts.Proxy(a.functions[rt.Function])
		if err != nil {
			return nil, fmt.Errorf("localgw: function %s (%s %s): %w", rt.Function, rt.Method, rt.Path, err)
		}
		if h == nil {
			return nil, fmt.Errorf("localgw: Options.Proxy returned no handler for function %s (%s %s)", rt.Function, rt.Method, rt.Path)
		}
		g.proxies[rt.Function] = h
	}
	return g, nil
}

// Stage returns the name of the stage the Gateway serves.
func (g *Gateway) Stage() string { return g.api.stage }

// APIID returns the REST API id used in method ARNs and request contexts.
func (g *Gateway) APIID() string { return g.apiID }

// Routes lists the API's methods, sorted by path and method.
func (g *Gateway) Routes() []Route {
	var out []Route
	var walk func(r *resource)
	walk = func(r *resource) {
		for _, hm := range sortedKeys(r.methods) {
			m := r.methods[hm]
			rt := Route{Method: hm, Path: r.path, Integration: m.integrationType, Function: m.function}
			if m.authorizer != nil {
				rt.Authorizer = m.authorizer.logicalID
			}
			out = append(out, rt)
		}
		for _, c := range r.children() {
			walk(c)
		}
	}
	walk(g.api.root)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// FlushAuthorizerCache empties the authorizer result cache, like API
// Gateway's FlushStageAuthorizersCache.
func (g *Gateway) FlushAuthorizerCache() {
	g.cacheMu.Lock()
	g.cache = map[string]cacheEntry{}
	g.cacheMu.Unlock()
}

// request is the state of one request through the gateway.
type request struct {
	r          *http.Request
	id         string
	extID      string
	start      time.Time
	body       []byte
	relPath    string // path below the stage or base path: /v1/inbox
	eventPath  string // the proxy event's path
	ctxPath    string // requestContext.path
	res        *resource
	m          *method
	pathParams map[string]string
	headers    http.Header
	query      map[string][]string
	sourceIP   string
	domain     string

	authorizer map[string]any    // requestContext.authorizer
	authVars   map[string]string // $context.authorizer.*
	cacheHit   bool

	errType    string
	errMessage string
	errNull    bool // $context.error.messageString is null
	validation string
	status     int
}

// ServeHTTP handles one request as API Gateway would.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := &request{r: r, id: g.newID(), extID: newExtendedID(), start: g.now()}
	q.sourceIP = r.RemoteAddr
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		q.sourceIP = host
	}
	q.domain = r.Host
	if g.domain != nil && g.domain.DomainName != "" {
		q.domain = g.domain.DomainName
	}
	g.serve(w, q)
	attrs := []slog.Attr{
		slog.String("request_id", q.id), slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()),
		slog.Int("status", q.status), slog.Duration("latency", g.now().Sub(q.start)),
	}
	if q.res != nil {
		attrs = append(attrs, slog.String("resource", q.res.path))
	}
	if q.m != nil && q.m.authorizer != nil {
		attrs = append(attrs, slog.Bool("authorizer_cache_hit", q.cacheHit))
	}
	if q.errType != "" {
		attrs = append(attrs, slog.String("gateway_response", q.errType), slog.String("error", q.errMessage))
	}
	g.log.LogAttrs(context.Background(), slog.LevelInfo, "localgw request", attrs...)
}

func (g *Gateway) serve(w http.ResponseWriter, q *request) {
	r := q.r
	escaped := r.URL.EscapedPath()
	segs := splitPath(escaped)
	if g.domain == nil {
		if len(segs) == 0 || segs[0] != g.api.stage {
			g.forbidden(w, q)
			return
		}
		segs = segs[1:]
		q.eventPath = strings.TrimPrefix(escaped, "/"+g.api.stage)
		if q.eventPath == "" {
			q.eventPath = "/"
		}
		q.ctxPath = escaped
	} else {
		if len(segs) < len(g.basePath) {
			g.forbidden(w, q)
			return
		}
		for i, s := range g.basePath {
			if segs[i] != s {
				g.forbidden(w, q)
				return
			}
		}
		segs = segs[len(g.basePath):]
		q.eventPath, q.ctxPath = escaped, escaped
	}
	q.relPath = "/" + strings.Join(segs, "/")
	q.headers = r.Header.Clone()
	if r.Host != "" {
		q.headers.Set("Host", r.Host)
	}
	q.query = parseQuery(r.URL.RawQuery)

	if g.blockedByWAF(w, q) {
		return
	}
	if !g.allow() {
		g.fail(w, q, "THROTTLED", http.StatusTooManyRequests, "Too Many Requests")
		return
	}
	if r.ContentLength > MaxRequestBytes {
		g.fail(w, q, "REQUEST_TOO_LARGE", http.StatusRequestEntityTooLarge, "Request Too Long")
		return
	}
	if r.Body != nil {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
		if err != nil {
			g.fail(w, q, "DEFAULT_4XX", http.StatusBadRequest, "the request body could not be read")
			return
		}
		if len(body) > MaxRequestBytes {
			g.fail(w, q, "REQUEST_TOO_LARGE", http.StatusRequestEntityTooLarge, "Request Too Long")
			return
		}
		q.body = body
	}

	res, params := match(g.api.root, segs, map[string]string{})
	if res != nil {
		q.res, q.pathParams = res, params
		q.m = res.methods[r.Method]
		if q.m == nil {
			q.m = res.methods["ANY"]
		}
	}
	if q.m == nil {
		g.fail(w, q, "MISSING_AUTHENTICATION_TOKEN", http.StatusForbidden, "Missing Authentication Token")
		return
	}

	if q.m.authorizer != nil && !g.authorize(w, q) {
		return
	}
	if q.m.validate {
		var missing []string
		for _, p := range q.m.required {
			if !q.hasParam(p) {
				missing = append(missing, p.name)
			}
		}
		if len(missing) > 0 {
			q.validation = "Missing required request parameters: [" + strings.Join(missing, ", ") + "]"
			g.fail(w, q, "BAD_REQUEST_PARAMETERS", http.StatusBadRequest, q.validation)
			return
		}
	}
	switch q.m.integrationType {
	case "AWS_PROXY":
		g.proxy(w, q)
	case "MOCK":
		g.mock(w, q)
	}
}

func (q *request) hasParam(p requestParam) bool {
	switch p.location {
	case "header":
		return len(q.headers.Values(p.name)) > 0
	case "querystring":
		return len(q.query[p.name]) > 0
	case "path":
		return q.pathParams[p.name] != ""
	}
	return false
}

// match finds the resource for a path's segments: a literal child before
// a {param} child before a {greedy+} child, backtracking when a branch
// does not match all segments.
func match(r *resource, segs []string, params map[string]string) (*resource, map[string]string) {
	if len(segs) == 0 {
		return r, params
	}
	seg := segs[0]
	if seg == "" {
		return nil, nil
	}
	for _, c := range r.literal {
		if c.pathPart == seg {
			if m, p := match(c, segs[1:], params); m != nil {
				return m, p
			}
		}
	}
	for _, c := range r.params {
		p2 := copyMap(params)
		p2[c.paramName()] = seg
		if m, p := match(c, segs[1:], p2); m != nil {
			return m, p
		}
	}
	if r.greedy != nil {
		for _, s := range segs {
			if s == "" {
				return nil, nil
			}
		}
		p2 := copyMap(params)
		p2[r.greedy.paramName()] = strings.Join(segs, "/")
		return r.greedy, p2
	}
	return nil, nil
}

// splitPath splits an escaped path into segments, ignoring one trailing
// slash.
func splitPath(p string) []string {
	p = strings.TrimPrefix(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// allow takes a token from the stage's throttling bucket.
func (g *Gateway) allow() bool {
	if g.throttle == nil {
		return true
	}
	g.throttleMu.Lock()
	defer g.throttleMu.Unlock()
	now := g.now()
	if !g.lastFill.IsZero() {
		if d := now.Sub(g.lastFill).Seconds(); d > 0 {
			g.tokens = min(g.throttle.burst, g.tokens+d*g.throttle.rate)
		}
	}
	g.lastFill = now
	if g.tokens < 1 {
		return false
	}
	g.tokens--
	return true
}

// methodArn is arn:aws:execute-api:region:account:apiId/stage/METHOD/path.
func (g *Gateway) methodArn(q *request) string {
	return fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/%s/%s/%s", g.region, g.account, g.apiID, g.api.stage, q.r.Method, strings.TrimPrefix(q.relPath, "/"))
}

func (g *Gateway) resourceID(r *resource) string {
	sum := sha256.Sum256([]byte(g.api.logicalID + "/" + r.logicalID))
	return hex.EncodeToString(sum[:])[:6]
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func newExtendedID() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	var b [16]byte
	_, _ = rand.Read(b[:])
	out := make([]byte, 16)
	for i := range out {
		out[i] = alphabet[int(b[i])%len(alphabet)]
	}
	out[15] = '='
	return string(out)
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
