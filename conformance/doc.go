// Package conformance is the contract suite of the Triggers HTTP API v1
// (DESIGN.md, docs/api.md): one set of tests that runs against any base
// URL, the local gateway or a deployed API Gateway stage.
//
// With no -base, the suite serves the API itself the way make dev does
// (internal/dev/localapi: the API Gateway emulator built from the synthesized
// dev API stack, the real authorizer and API handlers, DynamoDB Local), so
// `go test ./conformance` and `make test` run it locally:
//
//	go test ./conformance
//	go test ./conformance -args -template ../cdk.out/triggers-dev-api.template.json
//
// Against a deployment (`make smoke` after `cdk deploy`), pass the stage URL
// and the keys of two dedicated test tenants:
//
//	go test -count=1 ./conformance -args -base https://abc.execute-api.eu-west-1.amazonaws.com/live -key trg_A -key2 trg_B
//
// Flags (after -args):
//
//	-base URL     the stage URL (the ApiUrl output; a trailing slash is fine)
//	-key K        API key of test tenant A
//	-key2 K2      API key of test tenant B (another tenant)
//	-readonly     make no writes: only the checks that read or are refused
//	              run (authentication, methods, query validation, error
//	              shape); the others are skipped with the reason
//	-x-api-key    the deployment accepts X-Api-Key (authorizer cache off,
//	              AuthorizerCacheTtl 0); default: it must refuse it
//	-template P   the template to serve locally (no -base)
//
// The writing checks store events under the two tenants; they expire with
// the stage's retention (RETENTION_DAYS). Use tenants that exist only for
// this suite. The suite keeps below the default stage throttling (it
// retries a 429 after its Retry-After, and checks that one is there).
package conformance
