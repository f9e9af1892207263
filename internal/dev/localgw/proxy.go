package localgw

import (
	"context"
	"encoding/base64"
	"io"
	"mime"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

func withLambdaContext(ctx context.Context, arn string) context.Context {
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: newUUID(), InvokedFunctionArn: arn})
}

// proxyEvent builds the Lambda proxy integration's input event.
func (g *Gateway) proxyEvent(q *request) events.APIGatewayProxyRequest {
	h := q.headers.Clone()
	if xff := h.Get("X-Forwarded-For"); xff != "" {
		h.Set("X-Forwarded-For", xff+", "+q.sourceIP)
	} else if q.sourceIP != "" {
		h.Set("X-Forwarded-For", q.sourceIP)
	}
	proto := "http"
	if q.r.TLS != nil {
		proto = "https"
	}
	h.Set("X-Forwarded-Proto", proto)
	if addr, ok := q.r.Context().Value(http.LocalAddrContextKey).(interface{ String() string }); ok {
		if i := strings.LastIndex(addr.String(), ":"); i >= 0 {
			h.Set("X-Forwarded-Port", addr.String()[i+1:])
		}
	}
	ev := events.APIGatewayProxyRequest{
		Resource:                        q.res.path,
		Path:                            q.eventPath,
		HTTPMethod:                      q.r.Method,
		Headers:                         singleValues(h),
		MultiValueHeaders:               multiValues(h),
		QueryStringParameters:           lastValues(q.query),
		MultiValueQueryStringParameters: nilIfEmpty(q.query),
		PathParameters:                  nilIfEmptyMap(q.pathParams),
		StageVariables:                  nilIfEmptyMap(g.stageVars),
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID:         g.account,
			ResourceID:        g.resourceID(q.res),
			Stage:             g.api.stage,
			DomainName:        q.domain,
			DomainPrefix:      strings.Split(q.domain, ".")[0],
			RequestID:         q.id,
			ExtendedRequestID: q.extID,
			Protocol:          q.r.Proto,
			Identity: events.APIGatewayRequestIdentity{
				SourceIP:  q.sourceIP,
				UserAgent: q.r.UserAgent(),
			},
			ResourcePath:     q.res.path,
			Path:             q.ctxPath,
			Authorizer:       q.authorizer,
			HTTPMethod:       q.r.Method,
			RequestTime:      q.start.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			RequestTimeEpoch: q.start.UnixMilli(),
			APIID:            g.apiID,
		},
	}
	if len(q.body) > 0 {
		if g.isBinary(q.headers.Get("Content-Type")) {
			ev.Body = base64.StdEncoding.EncodeToString(q.body)
			ev.IsBase64Encoded = true
		} else {
			ev.Body = string(q.body)
		}
	}
	return ev
}

// proxy invokes an AWS_PROXY integration and maps its response.
func (g *Gateway) proxy(w http.ResponseWriter, q *request) {
	fn := g.api.functions[q.m.function]
	out, err := invoke(q.r.Context(), fn, g.functionArn(fn), MaxIntegrationTimeout, g.proxyEvent(q), g.proxies[q.m.function])
	if err != nil {
		var fe *functionError
		asFunctionError(err, &fe)
		switch fe.kind {
		case "integration-timeout":
			g.fail(w, q, "INTEGRATION_TIMEOUT", http.StatusGatewayTimeout, "Endpoint request timed out")
		case "request-too-large":
			// Lambda refuses the invocation: API Gateway answers 500.
			g.fail(w, q, "INTEGRATION_FAILURE", http.StatusInternalServerError, "Internal server error")
		default:
			// A function error (returned error, panic, timeout, too large
			// a response): 502.
			g.fail(w, q, "INTEGRATION_FAILURE", http.StatusBadGateway, "Internal server error")
		}
		return
	}
	// API Gateway's side of the hop, not the function's: encoding/json's
	// semantics (go-json-experiment's v1, which decodes the same in one
	// pass instead of two, half the CPU of a 70 KB inbox page), so the
	// emulator's own cost weighs less on a measurement of the API.
	var res events.APIGatewayProxyResponse
	if err := jsonv1.Unmarshal(out, &res); err != nil || res.StatusCode < 100 || res.StatusCode > 599 {
		// "Malformed Lambda proxy response".
		g.fail(w, q, "INTEGRATION_FAILURE", http.StatusBadGateway, "Internal server error")
		return
	}
	h := w.Header()
	multi := map[string]bool{}
	for k := range res.MultiValueHeaders {
		multi[textproto.CanonicalMIMEHeaderKey(k)] = true
	}
	for k, v := range res.Headers {
		if !multi[textproto.CanonicalMIMEHeaderKey(k)] {
			h.Set(k, v)
		}
	}
	for _, k := range sortedKeys(res.MultiValueHeaders) {
		for _, v := range res.MultiValueHeaders[k] {
			h.Add(k, v)
		}
	}
	// The Go server frames the body itself.
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	h.Del("Connection")
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	body := res.Body
	if res.IsBase64Encoded && (g.isBinary(firstMediaType(q.headers.Get("Accept"))) || g.isBinary(h.Get("Content-Type"))) {
		b, err := base64.StdEncoding.DecodeString(res.Body)
		if err != nil {
			for k := range h {
				h.Del(k)
			}
			g.fail(w, q, "API_CONFIGURATION_ERROR", http.StatusInternalServerError, "Internal server error")
			return
		}
		body = string(b)
	}
	g.commonHeaders(h, q)
	q.status = res.StatusCode
	w.WriteHeader(res.StatusCode)
	_, _ = io.WriteString(w, body)
}

// mock answers a MOCK integration with its default integration response.
func (g *Gateway) mock(w http.ResponseWriter, q *request) {
	mk := q.m.mock
	h := w.Header()
	for _, name := range sortedKeys(mk.headers) {
		if v, ok := g.paramValue(q, mk.headers[name]); ok {
			h.Set(name, v)
		}
	}
	body := ""
	if t, ok := pickTemplate(mk.templates, q.headers.Get("Accept")); ok {
		var lines []string
		for _, line := range strings.Split(t, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "#") {
				lines = append(lines, line)
			}
		}
		body = g.substitute(strings.Join(lines, "\n"), q)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	g.commonHeaders(h, q)
	q.status = mk.status
	w.WriteHeader(mk.status)
	_, _ = w.Write([]byte(body))
}

// isBinary reports whether a media type matches the API's
// BinaryMediaTypes (exact, type/*, or */*).
func (g *Gateway) isBinary(contentType string) bool {
	if contentType == "" || len(g.api.binaryMediaTypes) == 0 {
		return false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	}
	for _, b := range g.api.binaryMediaTypes {
		b = strings.ToLower(b)
		if b == "*/*" || b == mt || (strings.HasSuffix(b, "/*") && strings.HasPrefix(mt, strings.TrimSuffix(b, "*"))) {
			return true
		}
	}
	return false
}

func firstMediaType(accept string) string {
	return strings.TrimSpace(strings.Split(accept, ",")[0])
}

// parseQuery decodes a raw query string, keeping each name's values in
// order. A part that does not decode is kept as it was sent.
func parseQuery(raw string) map[string][]string {
	out := map[string][]string{}
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if dv, err := url.QueryUnescape(v); err == nil {
			v = dv
		}
		out[k] = append(out[k], v)
	}
	return out
}

// singleValues maps each header to its last value, as the event's
// headers field does.
func singleValues(h http.Header) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, vs := range h {
		if len(vs) > 0 {
			out[k] = vs[len(vs)-1]
		}
	}
	return out
}

func multiValues(h http.Header) map[string][]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func lastValues(q map[string][]string) map[string]string {
	if len(q) == 0 {
		return nil
	}
	out := make(map[string]string, len(q))
	for k, vs := range q {
		out[k] = vs[len(vs)-1]
	}
	return out
}

func nilIfEmpty(q map[string][]string) map[string][]string {
	if len(q) == 0 {
		return nil
	}
	return q
}

func nilIfEmptyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
