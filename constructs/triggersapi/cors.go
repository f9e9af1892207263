package triggersapi

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/contract"
)

// corsOf reads the props' Cors as the API function applies it; hasToken
// reports an origin or header known only at deploy time.
func corsOf(o *awsapigateway.CorsOptions) (c contract.CORS, hasToken bool) {
	if o == nil {
		return c, false
	}
	token := func(s *string) bool { return s != nil && *awscdk.Token_IsUnresolved(s) }
	if o.AllowOrigins != nil {
		for _, s := range *o.AllowOrigins {
			hasToken = hasToken || token(s)
			if s != nil {
				c.AllowOrigins = append(c.AllowOrigins, *s)
			}
		}
	}
	if o.ExposeHeaders != nil {
		for _, s := range *o.ExposeHeaders {
			hasToken = hasToken || token(s)
			if s != nil {
				c.ExposeHeaders = append(c.ExposeHeaders, *s)
			}
		}
	}
	c.AllowCredentials = o.AllowCredentials != nil && *o.AllowCredentials
	return c, hasToken
}

// corsEnvironment is the API function's CORS environment for c.
func corsEnvironment(c contract.CORS) map[string]*string {
	env := map[string]*string{contract.EnvCorsAllowOrigins: jsii.String(strings.Join(c.AllowOrigins, ","))}
	if c.AllowCredentials {
		env[contract.EnvCorsAllowCredentials] = jsii.String("true")
	}
	if len(c.ExposeHeaders) > 0 {
		env[contract.EnvCorsExposeHeaders] = jsii.String(strings.Join(c.ExposeHeaders, ","))
	}
	return env
}

// corsGatewayHeaders are the response parameters that let pages of c's
// origins read API Gateway's own answers (401, 403, 429...), which never
// reach the function. A gateway response's headers are fixed or mapped
// from the request, never conditional: one origin (or "*") is answered as
// it is; several are answered with the request's Origin, whichever it is
// (only these error answers, which hold no tenant data; the function's
// answers name allowed origins only).
func corsGatewayHeaders(c contract.CORS) map[string]*string {
	out := map[string]*string{"Access-Control-Expose-Headers": jsii.String("'" + strings.Join(c.Exposed(), ", ") + "'")}
	switch {
	case len(c.AllowOrigins) == 1 && c.AllowOrigins[0] == "*": // never with credentials (CheckCORS)
		out["Access-Control-Allow-Origin"] = jsii.String("'*'")
	case len(c.AllowOrigins) == 1 && c.AllowOrigins[0] != "*":
		out["Access-Control-Allow-Origin"] = jsii.String("'" + c.AllowOrigins[0] + "'")
		out["Vary"] = jsii.String("'Origin'")
	default:
		out["Access-Control-Allow-Origin"] = jsii.String("method.request.header.Origin")
		out["Vary"] = jsii.String("'Origin'")
	}
	if c.AllowCredentials {
		out["Access-Control-Allow-Credentials"] = jsii.String("'true'")
	}
	return out
}

// preflightOptions are the props' Cors for API Gateway's preflight
// responses: AllowHeaders, when unset, is CDK's default with the API's own
// request headers added (a browser refuses to send a header the preflight
// does not allow).
func preflightOptions(o *awsapigateway.CorsOptions) *awsapigateway.CorsOptions {
	if o == nil {
		return nil
	}
	c := *o
	if c.AllowHeaders == nil {
		h := append(*awsapigateway.Cors_DEFAULT_HEADERS(), jsii.String("Idempotency-Key"), jsii.String("X-Correlation-Id"))
		c.AllowHeaders = &h
	}
	return &c
}
