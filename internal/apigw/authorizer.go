package apigw

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/shard"
)

// ErrUnauthorized is the error API Gateway turns into a 401: an authorizer
// Lambda that fails with exactly the message "Unauthorized".
var ErrUnauthorized = errors.New("Unauthorized")

// Authenticator maps an API key to its tenant; *apikey.Store implements it.
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (string, error)
}

// PrincipalAuthenticator also returns the tenant's sharding;
// *apikey.Store implements it. An Authorizer whose Authenticator is one
// puts a sharded tenant's shard counts in the context.
type PrincipalAuthenticator interface {
	Principal(ctx context.Context, key string) (apikey.Principal, error)
}

// AuthorizerDeadlineMargin is how long before the invocation's deadline
// the authorizer gives up on DynamoDB and fails, so the failure is its own
// (logged, answered by API Gateway's AUTHORIZER_CONFIGURATION_ERROR
// response) rather than a function timeout.
const AuthorizerDeadlineMargin = 500 * time.Millisecond

// AuthorizerHandler is the Lambda handler type of a REQUEST authorizer.
type AuthorizerHandler func(context.Context, events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error)

// Authorizer returns an API Gateway REQUEST authorizer. It reads the key
// with apikey.Credential under sources, from the headers sources names and
// nothing else (with contract.KeySourcesBearer: the Authorization header, the
// authorizer cache's key, so a cached result can only ever be reused for
// the same credential), hashes and looks it up, and:
//   - allows the whole API stage for an active key, with the tenant id in
//     the context under contract.AuthorizerTenantKey (the policy covers every method
//     so that a cached result works for all of them), and a sharded
//     tenant's shard counts under contract.AuthorizerShardsKey and
//     contract.AuthorizerReadShardsKey: the write count in effect at the
//     call (apikey.Key.ShardsAt), so an answer given before a growth's
//     switch time carries the previous write count for its whole cache
//     TTL, never the new one (docs/sharding.md, Resharding);
//   - fails with "Unauthorized" (API Gateway: 401) for a missing or
//     unknown key;
//   - denies (API Gateway: 403) for a revoked key;
//   - returns the lookup error when DynamoDB fails, which API Gateway
//     answers with its AUTHORIZER_CONFIGURATION_ERROR response (the
//     construct makes it a 503 with Retry-After); errors are not cached.
//
// It logs one JSON line per call, never the key itself.
func Authorizer(auth Authenticator, sources contract.KeySources, log *slog.Logger) AuthorizerHandler {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, ev events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
		if dl, ok := ctx.Deadline(); ok {
			// Fail (and log it) before the invocation times out.
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-AuthorizerDeadlineMargin))
			defer cancel()
		}
		key, err := apikey.Credential(Headers(ev.Headers, ev.MultiValueHeaders), sources)
		var tenant string
		var shards shard.Config
		if err == nil {
			if pa, ok := auth.(PrincipalAuthenticator); ok {
				var p apikey.Principal
				p, err = pa.Principal(ctx, key)
				tenant, shards = p.Tenant, p.Shards
			} else {
				tenant, err = auth.Authenticate(ctx, key)
			}
		}
		attrs := []any{contract.LogFieldRequestID, ev.RequestContext.RequestID, contract.LogFieldMethod, ev.HTTPMethod, contract.LogFieldPath, ev.Path, "key_prefix", apikey.DisplayPrefix(key)}
		switch {
		case err == nil:
			log.InfoContext(ctx, "authorized", append(attrs, contract.LogFieldTenant, tenant)...)
			c := map[string]any{contract.AuthorizerTenantKey: tenant}
			if shards.Sharded() {
				c[contract.AuthorizerShardsKey] = strconv.Itoa(shards.Write)
				c[contract.AuthorizerReadShardsKey] = strconv.Itoa(shards.Read)
			}
			return policy(tenant, "Allow", stageWildcard(ev.MethodArn), c), nil
		case errors.Is(err, apikey.ErrRevoked):
			log.WarnContext(ctx, "denied: revoked API key", attrs...)
			return policy("revoked", "Deny", stageWildcard(ev.MethodArn), nil), nil
		case errors.Is(err, apikey.ErrMissing), errors.Is(err, apikey.ErrUnknown), errors.Is(err, apikey.ErrMalformed):
			log.WarnContext(ctx, "unauthorized: "+err.Error(), attrs...)
			return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
		}
		log.ErrorContext(ctx, "API key lookup failed", append(attrs, contract.LogFieldError, err.Error())...)
		return events.APIGatewayCustomAuthorizerResponse{}, err
	}
}

func policy(principal, effect, resource string, ctx map[string]any) events.APIGatewayCustomAuthorizerResponse {
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: principal,
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
			Version: "2012-10-17",
			Statement: []events.IAMPolicyStatement{{
				Action:   []string{"execute-api:Invoke"},
				Effect:   effect,
				Resource: []string{resource},
			}},
		},
		Context: ctx,
	}
}

// stageWildcard turns
// arn:aws:execute-api:region:account:api/stage/METHOD/path into
// arn:aws:execute-api:region:account:api/stage/*/*.
func stageWildcard(methodArn string) string {
	parts := strings.SplitN(methodArn, "/", 3)
	if len(parts) < 2 {
		return methodArn
	}
	return parts[0] + "/" + parts[1] + "/*/*"
}

// Headers merges API Gateway's two views of the request headers into an
// http.Header (canonical names, every value): multiValueHeaders wins for
// the names it has, since headers holds only the last value of each.
func Headers(single map[string]string, multi map[string][]string) http.Header {
	h := http.Header{}
	// Add only, so names differing in case ("authorization" and
	// "Authorization") keep every value whatever the map order: the
	// result never depends on iteration order.
	for k, vs := range multi {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for k, v := range single {
		if len(h.Values(k)) == 0 {
			h.Set(k, v)
		}
	}
	return h
}
