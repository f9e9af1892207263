// Package ddbconfig loads the AWS configuration of the commands and the
// local development server from the SDK's default chain (environment,
// shared config and credentials files, SSO, instance role), with the
// transport of package ddb. It imports the SDK's config package, which a
// Lambda function does not link (binary size and init time): the
// functions build theirs with internal/awsenv.
package ddbconfig

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/triggers-dev/triggers/internal/ddb"
)

// NewClient returns a DynamoDB client from the default AWS configuration
// chain (environment, shared config, SSO, instance role). With
// o.EndpointURL and no credentials in the environment it uses static
// dummy credentials, which DynamoDB Local accepts.
func NewClient(ctx context.Context, o ddb.Options) (*dynamodb.Client, error) {
	cfg, err := LoadConfig(ctx, o)
	if err != nil {
		return nil, err
	}
	return ddb.ClientFromConfig(cfg, o), nil
}

// LoadConfig returns the AWS configuration NewClient builds its client
// from (ddb's transport, region, credentials), for other service clients.
// The endpoint override applies to DynamoDB only: build that client with
// ddb.ClientFromConfig.
func LoadConfig(ctx context.Context, o ddb.Options) (aws.Config, error) {
	httpClient, retryer := o.Transport(ddb.DefaultAttemptTimeout)
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
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "ddbconfig.LoadConfig"}, nil
		})))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
}
