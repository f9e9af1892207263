// Package httpapi implements the Triggers HTTP API v1 as a net/http
// handler. The same handler serves a local HTTP server and, through
// package apigw, API Gateway REST proxy events in Lambda.
//
// The tenant comes from the request context (WithTenant, set by the
// Lambda adapter from the authorizer's context); a request without one is
// 401.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/cursor"
	"github.com/triggers-dev/triggers/internal/emf"
	"github.com/triggers-dev/triggers/internal/event"
)

// Store is what the handlers need from storage; *store.Store implements it.
type Store interface {
	Put(ctx context.Context, tenant string, e event.Event) error
	PutIdempotent(ctx context.Context, tenant string, e event.Event, key, requestHash string) (event.Event, bool, error)
	PutBatch(ctx context.Context, tenant string, events []event.Event) []error
	Get(ctx context.Context, tenant, id string) (event.Event, error)
	Transition(ctx context.Context, tenant, id string, from []event.Status, to event.Status) (event.Event, error)
	TransitionOnce(ctx context.Context, tenant, id string, from []event.Status, to event.Status) (event.Event, error)
	List(ctx context.Context, q event.InboxQuery) (event.Page, error)
}

// Config configures the API.
type Config struct {
	// Store keeps the events. Required.
	Store Store
	// CursorSecret signs inbox cursors; at least 32 bytes. Required.
	CursorSecret []byte
	// KeySources are the headers that may carry the API key, as the
	// deployed authorizer reads them (apikey.Credential). Requests whose
	// tenant came from the authorizer are still checked with
	// apikey.CheckExtraneous: behind a cached authorizer they may carry
	// credentials the authorizer never saw. Default: contract.KeySourcesBearer.
	KeySources contract.KeySources
	// Retention is how long events live. Default: event.DefaultRetention.
	Retention time.Duration
	// Logger receives one JSON line per request. Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// Metrics records ingestion outcomes (EventsIngested, EventsRejected
	// by reason) and every request's latency (RequestLatency by route).
	// Default: emf.Nop.
	Metrics emf.Recorder
	// RequestBudget bounds the time one request may spend: when it runs
	// out, the answer is 503 unavailable with Retry-After, whatever
	// DynamoDB is doing. When the request's context has a deadline (the
	// Lambda invocation's), the budget ends DeadlineMargin before it, so
	// the function answers instead of timing out. Default:
	// DefaultRequestBudget.
	RequestBudget time.Duration
	// Webhooks enables the webhook routes (subscriptions, attempts,
	// redeliver, recover). Default: nil, they answer 404 webhooks_disabled.
	Webhooks *Webhooks
	// WriterRegion and Region run the API on a global table with one
	// writer region (docs/multi-region.md): when WriterRegion is set and
	// is not Region (this function's region), the region is passive and
	// every write (any method but GET and HEAD) of an authenticated
	// tenant answers 503 unavailable with Retry-After, naming the writer
	// region; reads are served from the local replica. A passive region
	// is the server's state, not the client's mistake, hence a 5xx.
	// Default: "", every region accepts writes (single region).
	WriterRegion, Region string
	// CORS lets pages on other origins read the answers: every answer to
	// a request whose Origin is allowed carries Access-Control-Allow-Origin
	// and Access-Control-Expose-Headers (contract.CORSExposedHeaders and
	// CORS.ExposeHeaders), with Vary: Origin. Preflight (OPTIONS) requests
	// are API Gateway's (TriggersApiProps.Cors). Default: nil, no CORS
	// header.
	CORS *contract.CORS
}

// Request budget defaults.
const (
	// DefaultRequestBudget is below API Gateway's 29-second integration
	// timeout and the API function's default 10-second timeout.
	DefaultRequestBudget = 8 * time.Second
	// DeadlineMargin is kept free before the context's own deadline to
	// write the answer.
	DeadlineMargin = time.Second
	// minBudget is the least a request gets even when the invocation is
	// nearly out of time.
	minBudget = 100 * time.Millisecond
)

// StatusClientClosedRequest is the status logged (never sent: nobody is
// listening) for a request whose client went away before the answer,
// nginx's 499.
const StatusClientClosedRequest = 499

// API is the HTTP API; it implements http.Handler.
type API struct {
	store     Store
	cursors   *cursor.Codec
	sources   contract.KeySources
	budget    time.Duration
	retention time.Duration
	log       *slog.Logger
	now       func() time.Time
	metrics   emf.Recorder
	webhooks  *Webhooks
	// writer is the writer region when this region is passive, else "".
	writer string
	// cors is Config.CORS, prepared (nil: none).
	cors *corsPolicy
}

// New returns the API for cfg.
func New(cfg Config) (*API, error) {
	if cfg.Store == nil {
		return nil, errors.New("httpapi: Config.Store is nil: pass a *store.Store")
	}
	codec, err := cursor.New(cfg.CursorSecret)
	if err != nil {
		return nil, err
	}
	sources, err := contract.ParseKeySources(string(cfg.KeySources))
	if err != nil {
		return nil, fmt.Errorf("httpapi: Config.KeySources: %w", err)
	}
	a := &API{store: cfg.Store, cursors: codec, sources: sources, retention: cfg.Retention, log: cfg.Logger, now: cfg.Now, metrics: cfg.Metrics}
	if a.retention <= 0 {
		a.retention = event.DefaultRetention
	}
	if cfg.WriterRegion != "" && cfg.WriterRegion != cfg.Region {
		a.writer = cfg.WriterRegion
	}
	if cfg.CORS != nil {
		if err := contract.CheckCORS(*cfg.CORS); err != nil {
			return nil, fmt.Errorf("httpapi: Config.CORS: %w", err)
		}
		a.cors = newCORSPolicy(*cfg.CORS)
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.metrics == nil {
		a.metrics = emf.Nop{}
	}
	if cfg.Webhooks != nil {
		w := *cfg.Webhooks
		if w.Store == nil || w.Redeliver == nil || w.Recover == nil || w.Secrets == nil {
			return nil, errors.New("httpapi: Config.Webhooks needs Store, Redeliver, Recover and Secrets")
		}
		w.defaults()
		a.webhooks = &w
	}
	a.budget = cfg.RequestBudget
	if a.budget <= 0 {
		a.budget = DefaultRequestBudget
	}
	return a, nil
}

// budgetContext returns the context a request runs in: parent, cut off
// after the budget or DeadlineMargin before parent's deadline.
func (a *API) budgetContext(parent context.Context) (context.Context, context.CancelFunc) {
	d := a.budget
	if dl, ok := parent.Deadline(); ok {
		d = min(d, max(time.Until(dl)-DeadlineMargin, minBudget))
	}
	return context.WithTimeout(parent, d)
}

type ctxKey int

const (
	tenantKey ctxKey = iota
	requestIDKey
	sourceIPKey
	basePathKey
)

// WithBasePath returns ctx carrying the path the client's URL has before
// the API's own routes: the stage ("/live") on the execute-api endpoint,
// a custom domain's base path mapping, or "". Location headers start with
// it, so that a client following one reaches the event.
func WithBasePath(ctx context.Context, prefix string) context.Context {
	return context.WithValue(ctx, basePathKey, prefix)
}

// BasePath returns the base path ctx carries (WithBasePath), "" if none.
func BasePath(ctx context.Context) string { return ctxString(ctx, basePathKey) }

// WithTenant returns ctx carrying the authenticated tenant id.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey, tenant)
}

// WithRequestID returns ctx carrying the request id to use (API Gateway's).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

// WithSourceIP returns ctx carrying the client's IP address as the edge
// saw it.
func WithSourceIP(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, sourceIPKey, ip)
}

func ctxString(ctx context.Context, k ctxKey) string {
	v, _ := ctx.Value(k).(string)
	return v
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func sourceIP(r *http.Request) string {
	if ip := ctxString(r.Context(), sourceIPKey); ip != "" {
		return ip
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// validHeaderToken reports whether v is 1-max visible ASCII characters.
func validHeaderToken(v string, max int) bool {
	if v == "" || len(v) > max {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// idempotencyKey returns the request's Idempotency-Key, "" when it sends
// none. A header present but empty (a client's unset variable), given more
// than once, or not 1-255 visible ASCII characters is a 400: ignoring it
// would store every retry again without a word.
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values("Idempotency-Key")
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", &apiError{status: http.StatusBadRequest, code: "invalid_idempotency_key", message: "Idempotency-Key is given more than once: send one"}
	case vs[0] == "":
		return "", &apiError{status: http.StatusBadRequest, code: "invalid_idempotency_key", message: "Idempotency-Key is empty: send 1-255 visible ASCII characters, or no header"}
	case !validHeaderToken(vs[0], 255):
		return "", &apiError{status: http.StatusBadRequest, code: "invalid_idempotency_key", message: "Idempotency-Key must be 1-255 visible ASCII characters"}
	}
	return vs[0], nil
}

// reqInfo is what one request carries through the handlers.
type reqInfo struct {
	requestID     string
	correlationID string
	tenant        string
	// ingest is set for an authenticated request of an ingestion route
	// (ingestRoutes; serve); ingested and rejected are its per-event
	// outcomes (rejected by error code).
	ingest   bool
	ingested int
	rejected map[string]int
}

func (ri *reqInfo) reject(code string) {
	if ri.rejected == nil {
		ri.rejected = map[string]int{}
	}
	ri.rejected[code]++
}

// ServeHTTP serves the API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ri := &reqInfo{requestID: ctxString(r.Context(), requestIDKey)}
	if ri.requestID == "" {
		ri.requestID = newRequestID()
	}
	w.Header().Set("X-Request-Id", ri.requestID)
	a.cors.apply(w.Header(), r.Header.Get("Origin"))

	parent := r.Context()
	ctx, cancel := a.budgetContext(parent)
	defer cancel()
	status, body, err := a.serve(w, r.WithContext(ctx), ri)
	var ae *apiError
	if err != nil {
		ae = toAPIError(err)
		switch {
		case parent.Err() != nil:
			// The client went away (or the invocation ended): nobody
			// reads this answer; log what happened, not a 500.
			ae = &apiError{status: StatusClientClosedRequest, code: "client_closed_request", message: "the client closed the request before the answer"}
		case ctx.Err() != nil && ae.status >= 500:
			ae = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "storage did not answer within the request's time budget; retry after the Retry-After delay", retryAfter: strconv.Itoa(RetryAfterSeconds)}
		}
		status = ae.status
		body = contract.ErrorBody{Error: contract.ErrorDetail{Code: ae.code, Message: ae.message, RequestID: ri.requestID}}
		if ae.retryAfter != "" {
			w.Header().Set("Retry-After", ae.retryAfter)
		}
		if ae.allow != "" {
			w.Header().Set("Allow", ae.allow)
		}
		if ri.ingest {
			// Rejected whole: its events cannot be counted, so the
			// request counts as one.
			ri.reject(ae.code)
		}
	}
	writeJSON(w, status, body, ri.requestID)
	elapsed := time.Since(start)
	route := contract.RouteOf(r.Method, r.URL.Path)
	a.metrics.Request(route, elapsed)
	if ri.ingest {
		a.metrics.Ingest(ri.ingested, ri.rejected)
	}

	attrs := []slog.Attr{
		slog.String(contract.LogFieldRequestID, ri.requestID),
		slog.String(contract.LogFieldCorrelationID, ri.correlationID),
		slog.String(contract.LogFieldTenant, ri.tenant),
		slog.String(contract.LogFieldMethod, r.Method),
		slog.String(contract.LogFieldPath, r.URL.Path),
		slog.String(contract.LogFieldRoute, route),
		slog.Int(contract.LogFieldStatus, status),
		slog.Int64(contract.LogFieldDurationMs, elapsed.Milliseconds()),
	}
	level := slog.LevelInfo
	if err != nil {
		attrs = append(attrs, slog.String(contract.LogFieldErrorCode, ae.code), slog.String(contract.LogFieldError, err.Error()))
		if status >= 500 && status != StatusClientClosedRequest {
			level = slog.LevelError
		} else {
			level = slog.LevelWarn
		}
	}
	a.log.LogAttrs(r.Context(), level, contract.LogMsgRequest, attrs...)
}

// serve authenticates and routes; it returns the status and body of a
// success, or an error that ServeHTTP turns into the error response.
func (a *API) serve(w http.ResponseWriter, r *http.Request, ri *reqInfo) (status int, body any, err error) {
	defer func() {
		if p := recover(); p != nil {
			status, body, err = 0, nil, &panicError{value: p}
		}
	}()
	// An authenticated request of an ingestion route counts in the
	// ingestion metrics whatever answers it (ServeHTTP counts a refusal
	// as one rejected event, by its code), so that a client whose every
	// event is refused is an outage the metrics show. The checks before
	// the route's handler counted nothing: a bad X-Correlation-Id or the
	// passive region's 503 left EventsRejected silent (found by review).
	ingest := ingestRoutes[contract.RouteOf(r.Method, r.URL.Path)]
	if err := correlationID(w, r, ri); err != nil {
		// Checked before authentication, whose answer does not change
		// the 400: count it when the request would authenticate.
		if ingest {
			_, aerr := a.authenticate(r)
			ri.ingest = aerr == nil
		}
		return 0, nil, err
	}

	route, allow, id := match(r.Method, r.URL.Path)
	if route == nil && allow == "" {
		return 0, nil, &apiError{status: http.StatusNotFound, code: "not_found", message: "no such resource: " + truncatePath(r.URL.Path)}
	}

	if route != nil && public(r.Method, r.URL.Path) {
		// No credential is read: the authorizer does not run for it.
		if err := checkUnread(r); err != nil {
			return 0, nil, err
		}
		return route(a, w, r, ri, id)
	}
	if ri.tenant, err = a.authenticate(r); err != nil {
		return 0, nil, err
	}
	ri.ingest = ingest
	if route != nil && a.writer != "" && r.Method != http.MethodGet && r.Method != http.MethodHead {
		return 0, nil, &apiError{status: http.StatusServiceUnavailable, code: "unavailable", message: "this region is passive: writes go to the writer region " + a.writer + " (use its endpoint, or retry after the Retry-After delay in case of a failover)", retryAfter: strconv.Itoa(RetryAfterSeconds)}
	}
	if route == nil {
		return 0, nil, &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", message: r.Method + " is not allowed here; use " + allow, allow: allow}
	}
	if err := checkUnread(r); err != nil {
		return 0, nil, err
	}
	return route(a, w, r, ri, id)
}

// checkUnread refuses what the request's route would not read: a query
// string (checkNoQuery), an Idempotency-Key (checkNoIdempotencyKey) and a
// body (checkNoBody), in that order, before the route runs. A refusal on
// an ingestion route counts in EventsRejected, as every refusal of an
// authenticated ingestion request does (serve).
func checkUnread(r *http.Request) error {
	if err := checkNoQuery(r); err != nil {
		return err
	}
	if err := checkNoIdempotencyKey(r); err != nil {
		return err
	}
	return checkNoBody(r)
}

// correlationID checks the request's X-Correlation-Id: at most one, of
// 1-128 visible ASCII characters, else a 400 invalid_header. A header
// present but empty is refused too, as an empty Idempotency-Key is: it was
// taken for none, so a client with an unset variable never learnt that
// its requests carried no correlation id (found by review). A valid one is
// kept in ri and echoed in the answer.
func correlationID(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	cs := r.Header.Values("X-Correlation-Id")
	switch {
	case len(cs) == 0:
		return nil
	case len(cs) > 1:
		// The function would read the first and API Gateway's own
		// answers echo the last: one request, two correlation ids.
		return &apiError{status: http.StatusBadRequest, code: "invalid_header", message: fmt.Sprintf("X-Correlation-Id is given %d times: send one", len(cs))}
	case cs[0] == "":
		return &apiError{status: http.StatusBadRequest, code: "invalid_header", message: "X-Correlation-Id is empty: send 1-128 visible ASCII characters, or no header"}
	case !validHeaderToken(cs[0], 128):
		return &apiError{status: http.StatusBadRequest, code: "invalid_header", message: "X-Correlation-Id must be 1-128 visible ASCII characters"}
	}
	ri.correlationID = cs[0]
	w.Header().Set("X-Correlation-Id", cs[0])
	return nil
}

// authenticate returns the request's tenant, the authorizer's (from the
// context). The request may carry no credential outside the key sources:
// behind a cached authorizer, the authorizer never saw it.
func (a *API) authenticate(r *http.Request) (string, error) {
	if err := apikey.CheckExtraneous(r.Header, a.sources); err != nil {
		return "", unauthorized(a.sources, err)
	}
	tenant := ctxString(r.Context(), tenantKey)
	if tenant == "" {
		return "", unauthorized(a.sources, errors.New("no tenant from the authorizer"))
	}
	if !event.ValidTenantID(tenant) {
		return "", unauthorized(a.sources, fmt.Errorf("tenant id %q is invalid", truncatePath(tenant)))
	}
	return tenant, nil
}

type routeFunc func(a *API, w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error)

// match routes method and path; for a known path with another method it
// returns the allowed methods instead.
func match(method, path string) (routeFunc, string, string) {
	one := func(want string, f routeFunc) (routeFunc, string, string) {
		if method == want {
			return f, "", ""
		}
		return nil, want, ""
	}
	if f, allow, id := matchWebhooks(method, path); f != nil || allow != "" {
		return f, allow, id
	}
	switch path {
	case contract.PathEvents:
		return one(contract.MethodPost, (*API).createEvent)
	case contract.PathEventsBatch:
		return one(contract.MethodPost, (*API).createBatch)
	case contract.PathInbox:
		return one(contract.MethodGet, (*API).listInbox)
	case contract.PathInboxAck:
		return one(contract.MethodPost, (*API).ack)
	case contract.PathOpenAPI:
		return one(contract.MethodGet, (*API).openAPIDocument)
	}
	if rest, ok := strings.CutPrefix(path, contract.PathEventPrefix); ok && rest != "" && !strings.Contains(rest, "/") {
		switch method {
		case contract.MethodGet:
			return (*API).getEvent, "", rest
		case contract.MethodPatch:
			return (*API).patchEvent, "", rest
		}
		return nil, contract.MethodGet + ", " + contract.MethodPatch, ""
	}
	return nil, "", ""
}

func truncatePath(p string) string {
	if len(p) > 100 {
		return p[:100] + "..."
	}
	return p
}
