// Package ddb is the project's DynamoDB family: it builds the AWS clients
// of every composition root (the three Lambda functions, the commands and
// the local development server), on AWS or against a local endpoint such as
// DynamoDB Local; it creates tables from package schema; and it classifies
// DynamoDB errors for the HTTP contract (which failures are "try again
// later" and which blame the item).
//
// Its subpackages do not ship in a Lambda binary: ddblocal launches
// DynamoDB Local (tests and make dev) and ddbtest is the test harness on
// top of it.
package ddb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/schema"
)

// Options select the endpoint and region.
type Options struct {
	// EndpointURL overrides the DynamoDB endpoint (DynamoDB Local, say).
	// Default: the regional AWS endpoint.
	EndpointURL string
	// Region overrides the region. Default: the SDK's resolution
	// (AWS_REGION, profile), or us-east-1 with EndpointURL set.
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

// NewClient returns a DynamoDB client from the default AWS configuration
// chain (environment, shared config, Lambda role). With EndpointURL and no
// credentials in the environment it uses static dummy credentials, which
// DynamoDB Local accepts.
func NewClient(ctx context.Context, o Options) (*dynamodb.Client, error) {
	cfg, err := LoadConfig(ctx, o)
	if err != nil {
		return nil, err
	}
	return ClientFromConfig(cfg, o), nil
}

// ClientFromConfig returns a DynamoDB client for cfg (from LoadConfig or
// LocalConfig) with o's endpoint override; optFns adjust its options
// further (tests lower the attempts, say).
func ClientFromConfig(cfg aws.Config, o Options, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(do *dynamodb.Options) {
		if o.EndpointURL != "" {
			do.BaseEndpoint = aws.String(o.EndpointURL)
		}
	}}, optFns...)...)
}

// LoadConfig returns the AWS configuration NewClient builds its client
// from (retryer, region, credentials), for other service clients. The
// endpoint override applies to DynamoDB only.
func LoadConfig(ctx context.Context, o Options) (aws.Config, error) {
	httpClient, retryer := o.Transport(DefaultAttemptTimeout)
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithRetryer(retryer),
	}
	region := o.Region
	if region == "" && o.EndpointURL != "" && os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		region = "us-east-1"
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if o.EndpointURL != "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		opts = append(opts, config.WithCredentialsProvider(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "ddb.LoadConfig"}, nil
		})))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
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
// LocalRegion unless o.Region is set, the same retryer as LoadConfig and
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
	if _, err := c.CreateTable(ctx, tbl.CreateTableInput(name)); err != nil {
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
	if in := tbl.UpdateTimeToLiveInput(name); in != nil {
		if _, err := c.UpdateTimeToLive(ctx, in); err != nil {
			return true, fmt.Errorf("enable TTL on %s: %w", name, err)
		}
	}
	return true, nil
}
