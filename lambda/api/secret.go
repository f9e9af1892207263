package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// secretsAPI is the part of the Secrets Manager client fetchSecret uses.
type secretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// errMisconfigured marks a failure that retrying does not mend: a secret
// that was read but cannot be the cursor key, say.
var errMisconfigured = errors.New("misconfigured")

// fetchSecret reads the cursor secret (on the API's first request, see
// lazyProxy): it returns the current value of the secret id (an ARN or
// name): its SecretString, or its SecretBinary when it has no string. It
// fails when the value is shorter than minBytes (errMisconfigured).
func fetchSecret(ctx context.Context, c secretsAPI, id string, minBytes int) ([]byte, error) {
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return nil, fmt.Errorf("read secret %s: %w", id, err)
	}
	var v []byte
	switch {
	case out.SecretString != nil:
		v = []byte(*out.SecretString)
	default:
		v = out.SecretBinary
	}
	if len(v) < minBytes {
		return nil, fmt.Errorf("%w: secret %s is %d bytes: it must hold at least %d", errMisconfigured, id, len(v), minBytes)
	}
	return v, nil
}
