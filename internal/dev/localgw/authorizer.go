package localgw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// authResult is what an authorizer returned, as cached: its policy is
// evaluated against each request's method ARN, hit or miss.
type authResult struct {
	principalID string
	statements  []statement
	context     map[string]string
}

type statement struct {
	effect    string
	actions   []string
	resources []string
}

type cacheEntry struct {
	result  *authResult
	expires time.Time
}

// maxCacheEntries bounds the cache; expired entries are dropped first.
const maxCacheEntries = 10000

// authorize runs the method's authorizer, from the cache if it can. It
// writes the gateway response and returns false when the request may not
// proceed.
func (g *Gateway) authorize(w http.ResponseWriter, q *request) bool {
	au := q.m.authorizer
	values := make([][]string, len(au.sources))
	for i, src := range au.sources {
		vs := g.identityValues(q, src)
		empty := true
		for _, v := range vs {
			if v != "" {
				empty = false
			}
		}
		if empty {
			g.fail(w, q, "UNAUTHORIZED", http.StatusUnauthorized, "Unauthorized")
			return false
		}
		values[i] = vs
	}

	var res *authResult
	var key string
	if au.ttl > 0 {
		k, _ := json.Marshal(values)
		key = au.logicalID + "\x00" + string(k)
		g.cacheMu.Lock()
		if e, ok := g.cache[key]; ok && g.now().Before(e.expires) {
			res = e.result
			q.cacheHit = true
		}
		g.cacheMu.Unlock()
	}
	if res == nil {
		var typ, msg string
		res, typ, msg = g.invokeAuthorizer(q)
		switch typ {
		case "":
		case "UNAUTHORIZED":
			g.fail(w, q, typ, http.StatusUnauthorized, msg)
			return false
		default:
			q.errNull = true
			g.fail(w, q, typ, http.StatusInternalServerError, msg)
			return false
		}
		if au.ttl > 0 {
			now := g.now()
			g.cacheMu.Lock()
			if len(g.cache) >= maxCacheEntries {
				for k, e := range g.cache {
					if !now.Before(e.expires) {
						delete(g.cache, k)
					}
				}
				if len(g.cache) >= maxCacheEntries {
					g.cache = map[string]cacheEntry{}
				}
			}
			g.cache[key] = cacheEntry{result: res, expires: now.Add(au.ttl)}
			g.cacheMu.Unlock()
		}
	}

	switch evaluate(res.statements, g.methodArn(q)) {
	case explicitDeny:
		g.fail(w, q, "ACCESS_DENIED", http.StatusForbidden, "User is not authorized to access this resource with an explicit deny")
		return false
	case implicitDeny:
		g.fail(w, q, "ACCESS_DENIED", http.StatusForbidden, "User is not authorized to access this resource")
		return false
	}
	q.authorizer = map[string]any{"principalId": res.principalID}
	q.authVars = map[string]string{"principalId": res.principalID}
	for k, v := range res.context {
		q.authorizer[k] = v
		q.authVars[k] = v
	}
	latency := int64(0)
	if !q.cacheHit {
		latency = g.now().Sub(q.start).Milliseconds()
	}
	q.authorizer["integrationLatency"] = latency
	return true
}

// identityValues returns every value of an identity source in a request.
func (g *Gateway) identityValues(q *request, src identitySource) []string {
	switch src.location {
	case "header":
		return q.headers.Values(src.name)
	case "querystring":
		return q.query[src.name]
	case "stageVariables":
		if v, ok := g.stageVars[src.name]; ok {
			return []string{v}
		}
	case "context":
		if v, ok := g.contextVars(q)[src.name]; ok {
			return []string{v}
		}
	}
	return nil
}

// invokeAuthorizer calls the authorizer function through a JSON round
// trip, as Lambda does. typ is "" on success, UNAUTHORIZED for the error
// "Unauthorized", AUTHORIZER_CONFIGURATION_ERROR otherwise.
func (g *Gateway) invokeAuthorizer(q *request) (*authResult, string, string) {
	au := q.m.authorizer
	fn := g.api.functions[au.function]
	ev := events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type:                            "REQUEST",
		MethodArn:                       g.methodArn(q),
		Resource:                        q.res.path,
		Path:                            q.eventPath,
		HTTPMethod:                      q.r.Method,
		Headers:                         singleValues(q.headers),
		MultiValueHeaders:               multiValues(q.headers),
		QueryStringParameters:           lastValues(q.query),
		MultiValueQueryStringParameters: nilIfEmpty(q.query),
		PathParameters:                  nilIfEmptyMap(q.pathParams),
		StageVariables:                  nilIfEmptyMap(g.stageVars),
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
			Path:         q.ctxPath,
			AccountID:    g.account,
			ResourceID:   g.resourceID(q.res),
			Stage:        g.api.stage,
			RequestID:    q.id,
			Identity:     events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: q.sourceIP},
			ResourcePath: q.res.path,
			HTTPMethod:   q.r.Method,
			APIID:        g.apiID,
		},
	}
	h := g.authorizers[au.function]
	out, err := invoke(q.r.Context(), fn, g.functionArn(fn), MaxIntegrationTimeout, ev, h)
	if err != nil {
		var fe *functionError
		if asFunctionError(err, &fe) && fe.message == "Unauthorized" {
			return nil, "UNAUTHORIZED", "Unauthorized"
		}
		return nil, "AUTHORIZER_CONFIGURATION_ERROR", ""
	}
	res, err := parseAuthorizerOutput(out)
	if err != nil {
		return nil, "AUTHORIZER_CONFIGURATION_ERROR", ""
	}
	return res, "", ""
}

// parseAuthorizerOutput checks an authorizer's JSON output: a policy
// document with statements whose Effect is Allow or Deny, and a context
// of strings, numbers and booleans, which API Gateway passes on as
// strings.
func parseAuthorizerOutput(raw []byte) (*authResult, error) {
	var out struct {
		PrincipalID    string `json:"principalId"`
		PolicyDocument *struct {
			Statement []struct {
				Effect   string
				Action   stringOrList
				Resource stringOrList
			}
		} `json:"policyDocument"`
		Context map[string]json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	if out.PolicyDocument == nil || len(out.PolicyDocument.Statement) == 0 {
		return nil, fmt.Errorf("no policyDocument statements")
	}
	res := &authResult{principalID: out.PrincipalID, context: map[string]string{}}
	for _, s := range out.PolicyDocument.Statement {
		if s.Effect != "Allow" && s.Effect != "Deny" {
			return nil, fmt.Errorf("statement Effect %q", s.Effect)
		}
		res.statements = append(res.statements, statement{effect: s.Effect, actions: s.Action, resources: s.Resource})
	}
	for k, v := range out.Context {
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		var x any
		if err := d.Decode(&x); err != nil {
			return nil, err
		}
		switch t := x.(type) {
		case nil:
		case string:
			res.context[k] = t
		case bool:
			res.context[k] = fmt.Sprint(t)
		case json.Number:
			res.context[k] = t.String()
		default:
			return nil, fmt.Errorf("context %q is an object or array", k)
		}
	}
	return res, nil
}

// stringOrList decodes an IAM string-or-list field.
type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

type decision int

const (
	implicitDeny decision = iota
	allow
	explicitDeny
)

// evaluate applies a policy to execute-api:Invoke on a method ARN, as IAM
// does: an explicit Deny wins, else an Allow, else the request is denied.
func evaluate(stmts []statement, arn string) decision {
	d := implicitDeny
	for _, s := range stmts {
		if !anyMatch(s.actions, "execute-api:Invoke", true) || !anyMatch(s.resources, arn, false) {
			continue
		}
		if s.effect == "Deny" {
			return explicitDeny
		}
		d = allow
	}
	return d
}

func anyMatch(patterns []string, s string, foldCase bool) bool {
	for _, p := range patterns {
		if foldCase {
			if wildcard(strings.ToLower(p), strings.ToLower(s)) {
				return true
			}
		} else if wildcard(p, s) {
			return true
		}
	}
	return false
}

// wildcard matches s against an IAM pattern: * matches any run of
// characters (slashes included), ? any one character.
func wildcard(p, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

func (g *Gateway) functionArn(fn Function) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", g.region, g.account, fn.LogicalID)
}

// functionError is a Lambda function error: the handler returned an
// error, panicked, timed out, or its input or output broke a limit.
type functionError struct {
	kind    string // error, panic, timeout, integration-timeout, request-too-large, response-too-large, encoding
	message string
}

func (e *functionError) Error() string { return e.kind + ": " + e.message }

func asFunctionError(err error, target **functionError) bool {
	fe, ok := err.(*functionError)
	if ok {
		*target = fe
	}
	return ok
}

// invoke calls a handler as Lambda would: the event through JSON (at most
// MaxInvokeRequestBytes), a context with the function's deadline and a
// Lambda context, panics recovered, and the response as JSON (at most
// MaxInvokeResponseBytes). A handler still running at the deadline is
// abandoned (it keeps running in its goroutine).
func invoke[Req, Res any](parent context.Context, fn Function, arn string, limit time.Duration, ev Req, h func(context.Context, Req) (Res, error)) ([]byte, error) {
	in, err := json.Marshal(ev)
	if err != nil {
		return nil, &functionError{"encoding", err.Error()}
	}
	if len(in) > MaxInvokeRequestBytes {
		return nil, &functionError{"request-too-large", fmt.Sprintf("the event is %d bytes, more than Lambda's %d", len(in), MaxInvokeRequestBytes)}
	}
	var decoded Req
	if err := json.Unmarshal(in, &decoded); err != nil {
		return nil, &functionError{"encoding", err.Error()}
	}
	timeout := fn.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(withLambdaContext(context.WithoutCancel(parent), arn), timeout)
	defer cancel()
	wait := time.NewTimer(min(timeout, limit))
	defer wait.Stop()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: &functionError{"panic", fmt.Sprint(p)}}
			}
		}()
		res, err := h(ctx, decoded)
		if err != nil {
			done <- result{err: &functionError{"error", err.Error()}}
			return
		}
		out, err := json.Marshal(res)
		if err != nil {
			done <- result{err: &functionError{"encoding", err.Error()}}
			return
		}
		done <- result{out: out}
	}()
	select {
	case r := <-done:
		if r.err == nil && len(r.out) > MaxInvokeResponseBytes {
			return nil, &functionError{"response-too-large", fmt.Sprintf("the response is %d bytes, more than Lambda's %d", len(r.out), MaxInvokeResponseBytes)}
		}
		return r.out, r.err
	case <-wait.C:
		if limit < timeout {
			return nil, &functionError{"integration-timeout", fmt.Sprintf("no response within the integration timeout, %s", limit)}
		}
		return nil, &functionError{"timeout", fmt.Sprintf("Task timed out after %s", timeout)}
	}
}
