package localgw

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// defaultStatus is each gateway response type's default status code (AWS:
// "Gateway response types for API Gateway").
var defaultStatus = map[string]int{
	"ACCESS_DENIED":                  403,
	"API_CONFIGURATION_ERROR":        500,
	"AUTHORIZER_CONFIGURATION_ERROR": 500,
	"AUTHORIZER_FAILURE":             500,
	"BAD_REQUEST_PARAMETERS":         400,
	"BAD_REQUEST_BODY":               400,
	"EXPIRED_TOKEN":                  403,
	"INTEGRATION_FAILURE":            504,
	"INTEGRATION_TIMEOUT":            504,
	"INVALID_API_KEY":                403,
	"INVALID_SIGNATURE":              403,
	"MISSING_AUTHENTICATION_TOKEN":   403,
	"QUOTA_EXCEEDED":                 429,
	"REQUEST_TOO_LARGE":              413,
	"RESOURCE_NOT_FOUND":             404,
	"THROTTLED":                      429,
	"UNAUTHORIZED":                   401,
	"UNSUPPORTED_MEDIA_TYPE":         415,
	"WAF_FILTERED":                   403,
}

// errorTypes are the x-amzn-ErrorType headers API Gateway sends with its
// own responses.
var errorTypes = map[string]string{
	"ACCESS_DENIED":                  "AccessDeniedException",
	"AUTHORIZER_CONFIGURATION_ERROR": "AuthorizerConfigurationException",
	"BAD_REQUEST_PARAMETERS":         "BadRequestException",
	"INTEGRATION_FAILURE":            "InternalServerErrorException",
	"INTEGRATION_TIMEOUT":            "InternalServerErrorException",
	"MISSING_AUTHENTICATION_TOKEN":   "MissingAuthenticationTokenException",
	"REQUEST_TOO_LARGE":              "RequestTooLargeException",
	"THROTTLED":                      "TooManyRequestsException",
	"UNAUTHORIZED":                   "UnauthorizedException",
}

// defaultTemplate is API Gateway's body template for a gateway response
// that is not customized.
const defaultTemplate = `{"message":$context.error.messageString}`

// fail answers with the gateway response of type typ. natural is the
// status the situation has when neither typ nor DEFAULT_4XX/5XX set one
// (usually typ's default; 502 for a Lambda function error).
func (g *Gateway) fail(w http.ResponseWriter, q *request, typ string, natural int, message string) {
	q.errType, q.errMessage = typ, message
	class := "DEFAULT_5XX"
	if natural < 500 {
		class = "DEFAULT_4XX"
	}
	spec := g.api.responses[typ]
	fallback := g.api.responses[class]
	status := natural
	switch {
	case spec != nil && spec.status != 0:
		status = spec.status
	case fallback != nil && fallback.status != 0:
		status = fallback.status
	}
	if spec == nil {
		spec = fallback
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	tmpl := defaultTemplate
	if spec != nil {
		for _, name := range sortedKeys(spec.headers) {
			if v, ok := g.paramValue(q, spec.headers[name]); ok {
				h.Set(name, v)
			}
		}
		if t, ok := pickTemplate(spec.templates, q.headers.Get("Accept")); ok {
			tmpl = t
		}
	}
	g.commonHeaders(h, q)
	if et := errorTypes[typ]; et != "" {
		h.Set("x-amzn-ErrorType", et)
	}
	q.status = status
	w.WriteHeader(status)
	_, _ = w.Write([]byte(g.substitute(tmpl, q)))
}

// forbidden is API Gateway's answer to a path outside every stage or base
// path mapping: no API matched, so no gateway response applies.
func (g *Gateway) forbidden(w http.ResponseWriter, q *request) {
	q.errType, q.errMessage, q.status = "FORBIDDEN", "Forbidden", http.StatusForbidden
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-amzn-ErrorType", "ForbiddenException")
	g.commonHeaders(h, q)
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write([]byte(`{"message":"Forbidden"}`))
}

func (g *Gateway) commonHeaders(h http.Header, q *request) {
	h.Set("x-amzn-RequestId", q.id)
	h.Set("x-amz-apigw-id", q.extID)
}

// pickTemplate chooses the template for the request's Accept header,
// else application/json, else the first by name.
func pickTemplate(ts map[string]string, accept string) (string, bool) {
	if len(ts) == 0 {
		return "", false
	}
	for _, part := range strings.Split(accept, ",") {
		mt := strings.TrimSpace(strings.Split(part, ";")[0])
		if t, ok := ts[mt]; ok {
			return t, true
		}
	}
	if t, ok := ts["application/json"]; ok {
		return t, true
	}
	keys := sortedKeys(ts)
	return ts[keys[0]], true
}

// paramValue evaluates a gateway or integration response parameter
// value: 'literal', method.request.{header,querystring,path}.X,
// stageVariables.X or context.X.
func (g *Gateway) paramValue(q *request, expr string) (string, bool) {
	if len(expr) >= 2 && strings.HasPrefix(expr, "'") && strings.HasSuffix(expr, "'") {
		return expr[1 : len(expr)-1], true
	}
	switch {
	case strings.HasPrefix(expr, "method.request.header."):
		vs := q.headers.Values(strings.TrimPrefix(expr, "method.request.header."))
		if len(vs) == 0 {
			return "", false
		}
		return vs[len(vs)-1], true
	case strings.HasPrefix(expr, "method.request.querystring."):
		vs := q.query[strings.TrimPrefix(expr, "method.request.querystring.")]
		if len(vs) == 0 {
			return "", false
		}
		return vs[len(vs)-1], true
	case strings.HasPrefix(expr, "method.request.path."):
		v, ok := q.pathParams[strings.TrimPrefix(expr, "method.request.path.")]
		return v, ok
	case strings.HasPrefix(expr, "stageVariables."):
		v, ok := g.stageVars[strings.TrimPrefix(expr, "stageVariables.")]
		return v, ok
	case strings.HasPrefix(expr, "context."):
		v, ok := g.contextVars(q)[strings.TrimPrefix(expr, "context.")]
		return v, ok
	}
	return "", false
}

// varRef matches $context.x.y, ${context.x.y}, $stageVariables.x and the
// quiet forms ($!context.x).
var varRef = regexp.MustCompile(`\$!?(?:\{(context|stageVariables)((?:\.[A-Za-z_][A-Za-z0-9_-]*)+)\}|(context|stageVariables)((?:\.[A-Za-z_][A-Za-z0-9_-]*)+))`)

// substitute replaces the $context and $stageVariables references of a
// template. Values are inserted as they are, not escaped, as API Gateway
// does; unknown variables become empty.
func (g *Gateway) substitute(tmpl string, q *request) string {
	vars := g.contextVars(q)
	return varRef.ReplaceAllStringFunc(tmpl, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		root, path := m[1], m[2]
		if root == "" {
			root, path = m[3], m[4]
		}
		name := strings.TrimPrefix(path, ".")
		if root == "stageVariables" {
			return g.stageVars[name]
		}
		return vars[name]
	})
}

// contextVars are the $context variables of a request.
func (g *Gateway) contextVars(q *request) map[string]string {
	v := map[string]string{
		"requestId":                   q.id,
		"extendedRequestId":           q.extID,
		"httpMethod":                  q.r.Method,
		"path":                        q.ctxPath,
		"stage":                       g.api.stage,
		"apiId":                       g.apiID,
		"accountId":                   g.account,
		"domainName":                  q.domain,
		"domainPrefix":                strings.Split(q.domain, ".")[0],
		"protocol":                    q.r.Proto,
		"requestTime":                 q.start.UTC().Format("02/Jan/2006:15:04:05 -0700"),
		"requestTimeEpoch":            strconv.FormatInt(q.start.UnixMilli(), 10),
		"identity.sourceIp":           q.sourceIP,
		"identity.userAgent":          q.r.UserAgent(),
		"error.message":               q.errMessage,
		"error.responseType":          q.errType,
		"error.validationErrorString": q.validation,
	}
	if q.errNull {
		v["error.messageString"] = "null"
	} else {
		b, _ := json.Marshal(q.errMessage)
		v["error.messageString"] = string(b)
	}
	if q.res != nil {
		v["resourcePath"] = q.res.path
		v["resourceId"] = g.resourceID(q.res)
	}
	for k, a := range q.authVars {
		v["authorizer."+k] = a
	}
	return v
}
