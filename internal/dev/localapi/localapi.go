// Package localapi serves the Triggers API on this machine the way it is
// deployed: an API Gateway emulator (internal/dev/localgw) built from the
// synthesized API stack template invokes the real authorizer and API
// handlers through their Lambda entry points (internal/apigw), on
// any DynamoDB endpoint, usually DynamoDB Local.
//
// The functions are configured from their environment in the template,
// read by the same code as in Lambda (lambda/fnconfig): API_KEY_SOURCES,
// RETENTION_DAYS, LOG_LEVEL and any other literal value come from the
// construct, so changing the construct changes local behaviour. Only what
// CloudFormation would resolve at deploy time is replaced locally: the
// table names (EVENTS_TABLE, API_KEYS_TABLE), the cursor key (CURSOR_SECRET
// instead of CURSOR_SECRET_ARN), the KMS key of webhook secrets
// (WEBHOOK_SECRETS_KEY: a key on local-kms) and the DynamoDB client. The runtime
// metrics (METRICS_NAMESPACE) are off locally.
//
// It is used by make dev (internal/dev/devenv) and by the contract suite
// (conformance/); it ships in no Lambda binary.
package localapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/triggers-dev/triggers/schema"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apigw"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/dev/localgw"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

// DefaultTemplate is where `make synth` (and `make dev`) write the API
// stack of the dev environment, relative to the module root.
const DefaultTemplate = "cdk.out/triggers-dev-api.template.json"

// DB is what the handlers need of a DynamoDB client; *dynamodb.Client
// implements it.
type DB interface {
	store.API
	apikey.DB
}

// Config configures New.
type Config struct {
	// Template is the synthesized API stack (JSON). Required.
	Template []byte
	// DB is the DynamoDB client of both handlers. Required.
	DB DB
	// EventsTable and KeysTable name the tables, replacing the template's
	// references to the data stack. Required.
	EventsTable, KeysTable string
	// EventsProfile is the events table's profile, replacing the
	// template's EVENTS_PROFILE. Default: the template's (the construct
	// sets it from the table it was given).
	EventsProfile schema.EventsProfile
	// EventsSharding turns write sharding on (EVENTS_SHARDING=on),
	// replacing the template's setting; tenants' shard counts come from
	// their API-keys records. Default: the template's.
	EventsSharding bool
	// CursorSecret is the inbox cursor key (at least 32 bytes), replacing
	// the template's Secrets Manager secret. Default: a random key, so
	// cursors die with the process.
	CursorSecret []byte
	// Logger receives the gateway's, the authorizer's and the API's log
	// lines. Default: none.
	Logger *slog.Logger
	// Gateway sets the emulator's own options (CustomDomain, Now,
	// DisableThrottling...). Its Authorizer, Proxy and Logger are set by
	// New.
	Gateway localgw.Options
	// WebhookQueue, when set, replaces the template's webhook retry queue
	// (WEBHOOK_QUEUE_URL) for redeliveries: make dev runs the dispatcher
	// in process. Nil: the webhook routes answer webhooks_disabled, as on
	// a deployment without webhook delivery.
	WebhookQueue dispatch.Queue
	// AllowPrivateTargets lets subscriptions point at loopback and private
	// addresses (make dev's local receiver). Default: the deployed rules
	// (webhook.ValidateTarget).
	AllowPrivateTargets bool
	// KMS and SecretsKey replace the template's KMS key that seals webhook
	// signing secrets (WEBHOOK_SECRETS_KEY): a client of local-kms
	// (internal/dev/kmslocal) and a key there. Required with WebhookQueue.
	KMS        secretbox.KMS
	SecretsKey string
}

// API is the Triggers API served locally.
type API struct {
	// Gateway is the http.Handler to serve: the API Gateway stage.
	Gateway *localgw.Gateway
	// KeySources are the API_KEY_SOURCES the template gives the
	// authorizer (which requests it accepts).
	KeySources contract.KeySources
	// Retention is the API function's RETENTION_DAYS, as a duration.
	Retention time.Duration
	// BasePath is the path the API is served under: "/" + the stage
	// name, or the custom domain's base path ("" for the root mapping).
	BasePath string
}

// ReadTemplate reads a synthesized template, with an error that says how to
// make one when it is missing.
func ReadTemplate(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the API template %s does not exist: run make synth (make dev does it), or point -template at a synthesized API stack", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read the API template: %w", err)
	}
	return b, nil
}

// New builds the gateway from cfg.Template and wires each function the API
// uses to its real handler.
func New(cfg Config) (*API, error) {
	switch {
	case len(cfg.Template) == 0:
		return nil, errors.New("localapi: no template")
	case cfg.DB == nil:
		return nil, errors.New("localapi: no DynamoDB client")
	case cfg.EventsTable == "" || cfg.KeysTable == "":
		return nil, errors.New("localapi: both table names are required")
	case cfg.WebhookQueue != nil && (cfg.KMS == nil || cfg.SecretsKey == ""):
		return nil, errors.New("localapi: WebhookQueue needs KMS and SecretsKey (webhook signing secrets are sealed with KMS)")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	secret := cfg.CursorSecret
	if len(secret) == 0 {
		b := make([]byte, 48)
		_, _ = rand.Read(b)
		secret = []byte(base64.RawURLEncoding.EncodeToString(b))
	}
	out := &API{}
	var authSources []contract.KeySources
	opts := cfg.Gateway
	opts.Logger = cfg.Logger
	opts.Authorizer = func(fn localgw.Function) (localgw.AuthorizerFunc, error) {
		getenv, err := environment(fn, map[string]string{
			contract.EnvAPIKeysTable:     cfg.KeysTable,
			contract.EnvDynamoDBEndpoint: "",
		})
		if err != nil {
			return nil, err
		}
		c, err := fnconfig.LoadAuthorizer(getenv)
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", fn.LogicalID, err)
		}
		authSources = append(authSources, c.KeySources)
		keys := apikey.NewStore(cfg.DB, cfg.KeysTable)
		return apigw.Authorizer(keys, c.KeySources, log.With("function", fn.LogicalID)), nil
	}
	var retention []time.Duration
	opts.Proxy = func(fn localgw.Function) (localgw.ProxyFunc, error) {
		override := map[string]string{
			contract.EnvEventsTable:       cfg.EventsTable,
			contract.EnvCursorSecret:      string(secret),
			contract.EnvCursorSecretARN:   "",
			contract.EnvDynamoDBEndpoint:  "",
			contract.EnvMetricsNamespace:  "",
			contract.EnvWebhookQueueURL:   webhookQueueURL(cfg.WebhookQueue),
			contract.EnvWebhookSecretsKey: "",
		}
		if cfg.WebhookQueue != nil {
			override[contract.EnvWebhookSecretsKey] = cfg.SecretsKey
		}
		if cfg.EventsProfile != "" {
			override[contract.EnvEventsProfile] = string(cfg.EventsProfile)
		}
		if cfg.EventsSharding {
			override[contract.EnvEventsSharding] = "on"
		}
		getenv, err := environment(fn, override)
		if err != nil {
			return nil, err
		}
		c, err := fnconfig.LoadAPI(getenv)
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", fn.LogicalID, err)
		}
		retention = append(retention, c.Retention)
		st := store.New(cfg.DB, cfg.EventsTable, store.WithProfile(c.EventsProfile), store.WithSharding(c.EventsSharding), store.WithRoundHold(c.RoundHold))
		var webhooks *httpapi.Webhooks
		if c.WebhookQueueURL != "" && cfg.WebhookQueue != nil {
			sealer, err := secretbox.New(cfg.KMS, c.WebhookSecretsKey, secretbox.Options{})
			if err != nil {
				return nil, fmt.Errorf("function %s: %w", fn.LogicalID, err)
			}
			webhooks = &httpapi.Webhooks{Store: st, Redeliver: dispatch.Redeliver(cfg.WebhookQueue, st), Recover: dispatch.Recover(cfg.WebhookQueue), Secrets: sealer}
			if cfg.AllowPrivateTargets {
				webhooks.CheckTarget = func(_ context.Context, raw string) error {
					_, err := webhook.ParseTarget(raw)
					return err
				}
			}
		}
		api, err := httpapi.New(httpapi.Config{
			Webhooks:     webhooks,
			Store:        st,
			CursorSecret: c.CursorSecret,
			Retention:    c.Retention,
			KeySources:   c.KeySources,
			CORS:         c.CORS,
			Logger:       log.With("function", fn.LogicalID),
		})
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", fn.LogicalID, err)
		}
		return apigw.Proxy(api), nil
	}
	gw, err := localgw.New(cfg.Template, opts)
	if err != nil {
		return nil, err
	}
	out.Gateway = gw
	out.KeySources = contract.KeySourcesBearer
	if len(authSources) > 0 {
		out.KeySources = authSources[0]
	}
	if len(retention) > 0 {
		out.Retention = retention[0]
	}
	out.BasePath = "/" + gw.Stage()
	if d := opts.CustomDomain; d != nil {
		out.BasePath = ""
		if d.BasePath != "" {
			out.BasePath = "/" + d.BasePath
		}
	}
	return out, nil
}

// webhookQueueURL is the WEBHOOK_QUEUE_URL the local API function sees:
// a placeholder when redeliveries go to q (shaped as a queue URL, which the
// function's configuration checks; nothing dials it), empty (webhooks off)
// without.
func webhookQueueURL(q dispatch.Queue) string {
	if q == nil {
		return ""
	}
	return "http://localhost/000000000000/webhook-retry-queue"
}

// environment returns a getenv over fn's environment in the template, with
// local replaces the values CloudFormation would resolve. A variable the
// template sets to an intrinsic function that is not replaced is an error:
// it cannot be resolved without deploying.
func environment(fn localgw.Function, local map[string]string) (func(string) string, error) {
	env := map[string]string{}
	var unresolved []string
	for k, v := range fn.Environment {
		if _, ok := local[k]; ok {
			continue
		}
		switch v := v.(type) {
		case string:
			env[k] = v
		default:
			b, _ := json.Marshal(v)
			unresolved = append(unresolved, fmt.Sprintf("%s=%s", k, b))
		}
	}
	if len(unresolved) > 0 {
		sort.Strings(unresolved)
		return nil, fmt.Errorf("function %s: environment %v only resolves on deployment; localapi cannot serve it", fn.LogicalID, unresolved)
	}
	for k, v := range local {
		env[k] = v
	}
	return func(k string) string { return env[k] }, nil
}
