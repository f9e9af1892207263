// Command netinit calls AWS_ENDPOINT_URL before its first `next`, as a
// function that reads a secret at init does: cmd/triggers-coldstart's test
// checks that the harness sees it.
package main

import (
	"context"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	if resp, err := http.Get(os.Getenv("AWS_ENDPOINT_URL")); err == nil {
		resp.Body.Close()
	}
	lambda.Start(func(context.Context, map[string]any) (string, error) { return "hello", nil })
}
