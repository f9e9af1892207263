// Command hello is the floor of cmd/triggers-coldstart: the smallest
// aws-lambda-go function, built and started exactly like the project's
// functions, so that the difference is what the functions do and link.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, map[string]any) (string, error) { return "hello", nil })
}
