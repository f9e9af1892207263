package ddbtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/triggers-dev/triggers/internal/ddb"
)

// FaultFunc decides, per DynamoDB request, whether to answer it instead of
// DynamoDB Local: op is the operation ("PutItem", ...), body the request's
// JSON. A nil response sends the request on to the engine.
type FaultFunc func(op string, body []byte) *http.Response

// FaultClient returns a client of this engine whose HTTP layer asks fault
// first, so a test can make DynamoDB answer what the real service answers
// under stress (throttling, unprocessed items, cancelled transactions)
// while every other request reaches the real engine. The SDK retries at
// most 3 times, with backoff capped at 5 ms.
func (l *Local) FaultClient(fault FaultFunc) *dynamodb.Client {
	real := &http.Client{}
	return ddb.NewLocalClient(l.Endpoint, func(o *dynamodb.Options) {
		o.HTTPClient = HTTPClientFunc(func(r *http.Request) (*http.Response, error) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
			if resp := fault(op, body); resp != nil {
				resp.Request = r
				return resp, nil
			}
			return real.Do(r)
		})
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 3
			so.MaxBackoff = 5 * time.Millisecond
		})
	})
}

// AWSError is DynamoDB's answer for an error of type code (such as
// "ProvisionedThroughputExceededException") with message msg.
func AWSError(code, msg string) *http.Response {
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + code, "message": msg})
	return awsResponse(400, b)
}

// AWSServerError is DynamoDB's 500 answer with error code (such as
// InternalServerError) and message: a failure whose outcome is unknown.
func AWSServerError(code, msg string) *http.Response {
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + code, "message": msg})
	return awsResponse(500, b)
}

// AWSJSON is a successful DynamoDB answer with body v.
func AWSJSON(v any) *http.Response {
	b, _ := json.Marshal(v)
	return awsResponse(200, b)
}

func awsResponse(code int, body []byte) *http.Response {
	return &http.Response{
		StatusCode: code,
		Header:     http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(bytes.NewReader(body)),
	}
}
