// Package awsenv builds the AWS configuration of code running in AWS
// Lambda from the environment Lambda gives every function, without the
// SDK's config package: a Lambda function has no shared config files, no
// profile, no SSO and no instance metadata to read, and that package's
// credential chain and endpoint tables cost each binary about 1.5 MB and
// each cold start over a millisecond of package init (docs/performance.md,
// "Cold start").
//
// Config reads the region from AWS_REGION (else AWS_DEFAULT_REGION) and the
// execution role's credentials from AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, which Lambda sets, and
// gives every client the module's transport (internal/ddb: one attempt
// bounded by a timeout, bounded retries). It never fails and makes no
// network call: a missing region or credential fails each request
// instead, with an error naming the variable.
//
// The commands and the local development server, which run where a
// profile or SSO may hold the credentials, use internal/ddb/ddbconfig.
package awsenv

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"

	"github.com/triggers-dev/triggers/internal/ddb"
)

// Environment variables Config reads.
const (
	EnvRegion          = "AWS_REGION"
	EnvDefaultRegion   = "AWS_DEFAULT_REGION"
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken    = "AWS_SESSION_TOKEN"
	// EnvEndpointURL, when set, is every service's endpoint
	// (aws.Config.BaseEndpoint), and EnvEndpointURL_<SERVICE> one
	// service's (AWS_ENDPOINT_URL_SECRETS_MANAGER, say: the SDK ID in
	// upper case, spaces as underscores), as the SDK's config package
	// reads them.
	EnvEndpointURL = "AWS_ENDPOINT_URL"
	// EnvIgnoreEndpointURLs set to true ignores them.
	EnvIgnoreEndpointURLs = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
)

// LocalRegion is the region with o.EndpointURL set and no region in the
// environment (a local engine such as DynamoDB Local ignores it).
const LocalRegion = "us-east-1"

// Credentials sources (aws.Credentials.Source) of Config.
const (
	// SourceEnvironment is the source of the credentials read from the
	// environment.
	SourceEnvironment = "awsenv.Environment"
	// SourceLocal is the source of the dummy credentials for a local
	// endpoint.
	SourceLocal = "awsenv.Local"
)

// Local dummy credentials: with o.EndpointURL set and no access key in the
// environment, the clients sign with these, which DynamoDB Local accepts
// (as ddbconfig.LoadConfig does).
const (
	LocalAccessKeyID     = "local"
	LocalSecretAccessKey = "local"
)

// ErrNoRegion is the error of every request made without a region.
var ErrNoRegion = errors.New("awsenv: no AWS region: " + EnvRegion + " (or " + EnvDefaultRegion + ") is not set")

// ErrNoCredentials is wrapped by the error of every request made without
// credentials, which names the variables that are not set.
var ErrNoCredentials = errors.New("awsenv: no AWS credentials in the environment")

// Config returns the AWS configuration of a Lambda function from getenv
// (os.Getenv; read once, here) and o:
//
//   - region: o.Region, else AWS_REGION, else AWS_DEFAULT_REGION, else
//     LocalRegion when o.EndpointURL is set; with none, every request
//     fails with ErrNoRegion before reaching the network;
//   - credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
//     AWS_SESSION_TOKEN (optional); with o.EndpointURL set and no access
//     key, the dummy LocalAccessKeyID; otherwise, with a key or the secret
//     missing, every request fails with an error wrapping
//     ErrNoCredentials that names them;
//   - transport: o.Transport(ddb.DefaultAttemptTimeout);
//   - endpoints: AWS_ENDPOINT_URL for every service and
//     AWS_ENDPOINT_URL_<SERVICE> for one (EnvEndpointURL), unless
//     AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true. o.EndpointURL is
//     DynamoDB's only, and comes first: build that client with
//     ddb.ClientFromConfig.
//
// SDK warnings go to stderr, the function's log.
func Config(getenv func(string) string, o ddb.Options) aws.Config {
	httpClient, retryer := o.Transport(ddb.DefaultAttemptTimeout)
	cfg := aws.Config{
		Region:      region(getenv, o),
		Credentials: credentials(getenv, o),
		HTTPClient:  httpClient,
		Retryer:     retryer,
		Logger:      logging.NewStandardLogger(os.Stderr),
	}
	if ignore, _ := strconv.ParseBool(getenv(EnvIgnoreEndpointURLs)); !ignore {
		if u := getenv(EnvEndpointURL); u != "" {
			cfg.BaseEndpoint = aws.String(u)
		}
		cfg.ConfigSources = append(cfg.ConfigSources, serviceEndpoints{getenv})
	}
	if cfg.Region == "" {
		cfg.APIOptions = append(cfg.APIOptions, requireRegion)
	}
	return cfg
}

func region(getenv func(string) string, o ddb.Options) string {
	for _, r := range []string{o.Region, getenv(EnvRegion), getenv(EnvDefaultRegion)} {
		if r != "" {
			return r
		}
	}
	if o.EndpointURL != "" {
		return LocalRegion
	}
	return ""
}

func credentials(getenv func(string) string, o ddb.Options) aws.CredentialsProvider {
	id, secret := getenv(EnvAccessKeyID), getenv(EnvSecretAccessKey)
	if id == "" && o.EndpointURL != "" {
		return static{aws.Credentials{AccessKeyID: LocalAccessKeyID, SecretAccessKey: LocalSecretAccessKey, Source: SourceLocal}}
	}
	var missing []string
	for _, v := range []struct{ name, value string }{{EnvAccessKeyID, id}, {EnvSecretAccessKey, secret}} {
		if v.value == "" {
			missing = append(missing, v.name+" is not set")
		}
	}
	if missing != nil {
		return missingCredentials{err: &credentialsError{missing: strings.Join(missing, ", ")}}
	}
	return static{aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: getenv(EnvSessionToken), Source: SourceEnvironment}}
}

// serviceEndpoints is the configuration source (aws.Config.ConfigSources)
// of the service-specific endpoints: each service client asks it for its
// SDK ID when it is built.
type serviceEndpoints struct{ getenv func(string) string }

// GetServiceBaseEndpoint implements the SDK's
// configsources.ServiceBaseEndpointProvider.
func (e serviceEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	u := e.getenv(EnvEndpointURL + "_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_"))
	return u, u != "", nil
}

// static provides fixed credentials: Lambda's do not change during the
// life of an execution environment.
type static struct{ creds aws.Credentials }

func (s static) Retrieve(context.Context) (aws.Credentials, error) { return s.creds, nil }

// missingCredentials fails every retrieval.
type missingCredentials struct{ err error }

func (m missingCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, m.err
}

type credentialsError struct{ missing string }

func (e *credentialsError) Error() string { return ErrNoCredentials.Error() + ": " + e.missing }

func (e *credentialsError) Unwrap() error { return ErrNoCredentials }

// requireRegion fails a request whose client has no region, before its
// endpoint is resolved, with ErrNoRegion (the SDK's own error says
// "Missing Region" without naming a variable).
func requireRegion(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("awsenv.RequireRegion",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if awsmiddleware.GetRegion(ctx) == "" {
				return middleware.InitializeOutput{}, middleware.Metadata{}, ErrNoRegion
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}
