// Package ddb is the project's DynamoDB family: it builds the DynamoDB
// clients of every composition root (the Lambda functions, the commands
// and the local development server) with one transport (Options.Transport:
// bounded attempts, each with a timeout), on AWS or against a local
// endpoint such as DynamoDB Local; it creates tables from package schema;
// it classifies DynamoDB errors for the HTTP contract (which failures
// are "try again later" and which blame the item); and it decodes Query
// responses in one pass where a caller asks (FastQueryDecoding).
//
// The AWS configuration comes from internal/awsenv in a Lambda
// function (its environment, without the SDK's config package), from
// ddbconfig elsewhere (the SDK's default chain: profiles, SSO), or from
// LocalConfig for a local engine. Package ddb itself does not import the
// SDK's config package, which would weigh on every function's binary and
// cold start.
//
// Its subpackages do not ship in a Lambda binary: ddbconfig loads the
// SDK's default configuration (commands, make dev), ddblocal launches
// DynamoDB Local (tests and make dev) and ddbtest is the test harness on
// top of it.
package ddb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/schema"
)

// Options select the endpoint and region.
type Options struct {
	// EndpointURL overrides the DynamoDB endpoint (DynamoDB Local, say).
	// Default: the regional AWS endpoint.
	EndpointURL string
	// Region overrides the region. Default: the environment's
	// (AWS_REGION; ddbconfig also reads the profile), or us-east-1 with
	// EndpointURL set.
	Region string
	// MaxAttempts bounds the SDK's attempts per call, retries of
	// throttling with exponential backoff included. Default: 4.
	MaxAttempts int
	// AttemptTimeout bounds one HTTP attempt (connect, send, read the
	// whole response): a DynamoDB that accepts the connection and then
	// hangs costs this much per attempt, not the caller's whole deadline,
	// and the SDK retries the attempt. Default: DefaultAttemptTimeout.
	AttemptTimeout time.Duration
}

// DefaultAttemptTimeout bounds one DynamoDB HTTP attempt. DynamoDB answers
// in milliseconds; a 25-item batch of 400 KB items is 10 MB, well under it.
const DefaultAttemptTimeout = 3 * time.Second

// ClientFromConfig returns a DynamoDB client for cfg (from
// awsenv.Config, ddbconfig.LoadConfig or LocalConfig) with o's endpoint
// override; optFns adjust its options further (tests lower the attempts,
// say).
func ClientFromConfig(cfg aws.Config, o Options, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(do *dynamodb.Options) {
		if o.EndpointURL != "" {
			do.BaseEndpoint = aws.String(o.EndpointURL)
		}
	}}, optFns...)...)
}

// Transport returns the HTTP client (one attempt bounded by
// o.AttemptTimeout, else timeout) and the retryer (o.MaxAttempts, else 4,
// backoff at most 2 s) of every AWS configuration of this module: for an
// aws.Config's HTTPClient and Retryer. Timeout is DefaultAttemptTimeout
// for AWS, LocalAttemptTimeout for a local engine.
func (o Options) Transport(timeout time.Duration) (*awshttp.BuildableClient, func() aws.Retryer) {
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = 4
	}
	if o.AttemptTimeout > 0 {
		timeout = o.AttemptTimeout
	}
	return awshttp.NewBuildableClient().WithTimeout(timeout), func() aws.Retryer {
		return retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = attempts
			so.MaxBackoff = 2 * time.Second
		})
	}
}

// Static credentials and region of LocalConfig: DynamoDB Local accepts any
// credentials and keeps one database per access key and region (unless it
// runs -sharedDb), so every local client uses the same ones.
const (
	LocalRegion          = "us-east-1"
	LocalAccessKeyID     = "dynamotest"
	LocalSecretAccessKey = "dynamotest"
)

// LocalAttemptTimeout bounds one HTTP attempt against a local engine: a
// JVM on a busy 2-core machine pauses longer than DynamoDB does.
const LocalAttemptTimeout = 10 * time.Second

// LocalConfig returns the configuration of a client for a local engine
// such as DynamoDB Local: static credentials (LocalAccessKeyID), region
// LocalRegion unless o.Region is set, the same retryer as the other
// configurations (Transport) and
// attempts bounded by o.AttemptTimeout or LocalAttemptTimeout. It reads
// nothing from the environment or shared config files, so a developer's
// AWS profile never decides which local database a test sees.
func LocalConfig(o Options) aws.Config {
	httpClient, retryer := o.Transport(LocalAttemptTimeout)
	region := o.Region
	if region == "" {
		region = LocalRegion
	}
	return aws.Config{
		Region:     region,
		HTTPClient: httpClient,
		Retryer:    retryer,
		Credentials: aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: LocalAccessKeyID, SecretAccessKey: LocalSecretAccessKey, Source: "ddb.LocalConfig"}, nil
		})),
	}
}

// NewLocalClient returns a DynamoDB client for the local engine at
// endpoint (LocalConfig); optFns adjust its options.
func NewLocalClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	o := Options{EndpointURL: endpoint}
	return ClientFromConfig(LocalConfig(o), o, optFns...)
}

// CreateTable creates the table tbl under the physical name name, waits
// until it is ACTIVE, then enables TTL when the schema has a TTL
// attribute. With ifMissing, an existing table is left alone and created
// is false.
func CreateTable(ctx context.Context, c *dynamodb.Client, tbl schema.Table, name string, ifMissing bool) (created bool, err error) {
	if err := tbl.Validate(); err != nil {
		return false, fmt.Errorf("schema %q is invalid: %w", tbl.Name, err)
	}
	if _, err := c.CreateTable(ctx, CreateTableInput(tbl, name)); err != nil {
		var inUse *types.ResourceInUseException
		if ifMissing && errors.As(err, &inUse) {
			return false, nil
		}
		return false, fmt.Errorf("create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 50 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
		return true, fmt.Errorf("wait for table %s: %w", name, err)
	}
	if in := UpdateTimeToLiveInput(tbl, name); in != nil {
		if _, err := c.UpdateTimeToLive(ctx, in); err != nil {
			return true, fmt.Errorf("enable TTL on %s: %w", name, err)
		}
	}
	return true, nil
}
