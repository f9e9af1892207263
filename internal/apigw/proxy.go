// Package apigw connects the net/http API and the API-key check to
// AWS Lambda behind an API Gateway REST API: Proxy turns proxy-integration
// events into http.Requests, Authorizer implements a REQUEST authorizer.
// Nothing else in the runtime knows about Lambda.
package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/shard"
)

// ProxyHandler is the Lambda handler type of a REST API proxy integration.
type ProxyHandler func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// Proxy adapts h to API Gateway REST proxy events. The request id is API
// Gateway's, the source IP its identity.sourceIp, and the tenant the
// authorizer context's tenantId. It never returns an error: every failure
// is an HTTP response.
func Proxy(h http.Handler) ProxyHandler {
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		r, err := Request(ctx, ev)
		if err != nil {
			slog.ErrorContext(ctx, "cannot convert the API Gateway event", contract.LogFieldRequestID, ev.RequestContext.RequestID, contract.LogFieldError, err.Error())
			return events.APIGatewayProxyResponse{
				StatusCode: http.StatusBadRequest,
				Headers:    map[string]string{"Content-Type": "application/json", "X-Request-Id": ev.RequestContext.RequestID},
				Body:       string(contract.AppendErrorBody(nil, "invalid_body", "the request body is not valid base64", ev.RequestContext.RequestID)),
			}, nil
		}
		w := &recorder{header: http.Header{}}
		h.ServeHTTP(w, r)
		return w.response(), nil
	}
}

// Request converts a REST proxy event to an http.Request carrying the
// request id, source IP and tenant in its context.
func Request(ctx context.Context, ev events.APIGatewayProxyRequest) (*http.Request, error) {
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, err
		}
		body = b
	}
	q := url.Values{}
	if len(ev.MultiValueQueryStringParameters) > 0 {
		for k, vs := range ev.MultiValueQueryStringParameters {
			q[k] = append([]string(nil), vs...)
		}
	} else {
		for k, v := range ev.QueryStringParameters {
			q.Set(k, v)
		}
	}
	route := routePath(ev)
	u := &url.URL{Path: route, RawQuery: q.Encode()}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx = httpapi.WithRequestID(ctx, ev.RequestContext.RequestID)
	// Without one (a test event), the handler falls back to RemoteAddr,
	// which is the same field.
	ctx = httpapi.WithSourceIP(ctx, ev.RequestContext.Identity.SourceIP)
	// The client's path is the stage or base path, then the route.
	if base, ok := strings.CutSuffix(ev.RequestContext.Path, route); ok && route != "" {
		ctx = httpapi.WithBasePath(ctx, base)
	}
	if t, ok := ev.RequestContext.Authorizer[contract.AuthorizerTenantKey].(string); ok && t != "" {
		ctx = httpapi.WithTenant(ctx, t)
		ctx = shard.WithConfig(ctx, shardsOf(ev.RequestContext.Authorizer))
	}
	r, err := http.NewRequestWithContext(ctx, ev.HTTPMethod, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.RequestURI = u.RequestURI()
	r.ContentLength = int64(len(body))
	r.RemoteAddr = ev.RequestContext.Identity.SourceIP
	if len(ev.MultiValueHeaders) > 0 {
		for k, vs := range ev.MultiValueHeaders {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
	} else {
		for k, v := range ev.Headers {
			r.Header.Set(k, v)
		}
	}
	if host := r.Header.Get("Host"); host != "" {
		r.Host = host
	}
	return r, nil
}

// shardsOf reads a tenant's shard counts from the authorizer context
// (strings, as API Gateway passes them; numbers too). Absent or invalid
// counts mean one shard: an answer cached before the tenant was sharded
// has none.
func shardsOf(auth map[string]any) shard.Config {
	count := func(k string) int {
		switch v := auth[k].(type) {
		case string:
			if n, err := shard.ParseCount(v); err == nil {
				return n
			}
		case float64:
			if v >= 1 && v <= shard.MaxShards && v == float64(int(v)) {
				return int(v)
			}
		}
		return 1
	}
	return shard.Config{Write: count(contract.AuthorizerShardsKey), Read: count(contract.AuthorizerReadShardsKey)}
}

// routePath is the path the handler routes on: the API Gateway resource
// with its path parameters filled in, not the raw path, which carries the
// base path of a custom domain mapping ("/triggers/v1/events" for resource
// "/v1/events"). Without a resource (a test event, say) it is the path.
// A trailing slash of the path is kept: API Gateway selects a resource
// for its path with one too ("/v1/inbox/" is /v1/inbox), which is no
// route of the API (a 404, as the handler served on its own answers), so
// the handler must see it.
func routePath(ev events.APIGatewayProxyRequest) string {
	route := resourcePath(ev)
	if strings.HasSuffix(ev.Path, "/") && !strings.HasSuffix(route, "/") {
		route += "/"
	}
	return route
}

// resourcePath is routePath without the trailing slash rule.
func resourcePath(ev events.APIGatewayProxyRequest) string {
	if ev.Resource == "" {
		if ev.Path == "" {
			return "/"
		}
		return ev.Path
	}
	segs := strings.Split(ev.Resource, "/")
	for i, seg := range segs {
		if len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
			name := strings.TrimSuffix(seg[1:len(seg)-1], "+")
			segs[i] = ev.PathParameters[name]
		}
	}
	return strings.Join(segs, "/")
}

// recorder is a minimal http.ResponseWriter buffering the response. The
// body is a strings.Builder: the proxy response's body is a string, and
// the builder's is the buffer itself, not a copy of it (an inbox page is
// 70 KB).
type recorder struct {
	header      http.Header
	status      int
	body        strings.Builder
	wroteHeader bool
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

func (w *recorder) response() events.APIGatewayProxyResponse {
	w.WriteHeader(http.StatusOK)
	res := events.APIGatewayProxyResponse{StatusCode: w.status, MultiValueHeaders: map[string][]string{}}
	for k, vs := range w.header {
		res.MultiValueHeaders[k] = append([]string(nil), vs...)
	}
	if body := w.body.String(); utf8.ValidString(body) {
		res.Body = body
	} else {
		res.Body = base64.StdEncoding.EncodeToString([]byte(body))
		res.IsBase64Encoded = true
	}
	res.MultiValueHeaders["Content-Length"] = []string{strconv.Itoa(w.body.Len())}
	return res
}
