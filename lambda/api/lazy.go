package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apigw"
	"github.com/triggers-dev/triggers/internal/httpapi"
)

// lazyProxy is the API function's handler when the cursor key lives in
// Secrets Manager: the API is built on the first request, which reads the
// secret, instead of at cold start, so that init makes no network call
// (docs/performance.md). The built API is kept for the life of the execution
// environment, so the secret is read once. A failure is not kept: the
// request gets an error response in the API's shape (503 unavailable with
// Retry-After when the secret could not be read, 500 internal when its
// value is unusable: the codes docs/api.md lists), the reason is logged at ERROR, and the next
// request tries again.
type lazyProxy struct {
	// build reads the secret and builds the API.
	build func(ctx context.Context) (http.Handler, error)
	log   *slog.Logger
	// cors is the API's CORS configuration, for the failure answers.
	cors *contract.CORS

	mu    sync.Mutex
	proxy apigw.ProxyHandler
}

// handle is the Lambda handler.
func (l *lazyProxy) handle(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	proxy, err := l.get(ctx)
	if err != nil {
		return l.failure(ctx, ev, err)
	}
	return proxy(ctx, ev)
}

func (l *lazyProxy) get(ctx context.Context) (apigw.ProxyHandler, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proxy != nil {
		return l.proxy, nil
	}
	// Leave the API's own margin to answer before the invocation ends.
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-httpapi.DeadlineMargin))
		defer cancel()
	}
	h, err := l.build(ctx)
	if err != nil {
		return nil, err
	}
	l.proxy = apigw.Proxy(h)
	return l.proxy, nil
}

// failure is the response to a request the API could not be built for:
// httpapi.Failing's, so it carries what every answer of the API does
// (X-Request-Id, X-Correlation-Id echoed, CORS, Retry-After on a 503).
func (l *lazyProxy) failure(ctx context.Context, ev events.APIGatewayProxyRequest, err error) (events.APIGatewayProxyResponse, error) {
	status, code, msg := http.StatusServiceUnavailable, "unavailable", "the service could not read its configuration; retry after the Retry-After delay"
	if errors.Is(err, errMisconfigured) {
		status, code, msg = http.StatusInternalServerError, "internal", "the service is misconfigured; quote the request id when reporting it"
	}
	l.log.ErrorContext(ctx, "cannot build the API", contract.LogFieldRequestID, ev.RequestContext.RequestID, contract.LogFieldStatus, status, contract.LogFieldError, err.Error())
	resp, perr := apigw.Proxy(httpapi.Failing(l.cors, status, code, msg))(ctx, ev)
	// Single-valued headers, as this answer always had.
	if resp.MultiValueHeaders != nil {
		resp.Headers = map[string]string{}
		for k, vs := range resp.MultiValueHeaders {
			resp.Headers[k] = strings.Join(vs, ", ")
		}
		resp.MultiValueHeaders = nil
	}
	return resp, perr
}
