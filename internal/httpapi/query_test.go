package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
)

// snapshot returns every item of the env's table, as sorted JSON lines.
func (e *env) snapshot(t *testing.T) []string {
	t.Helper()
	out, err := db.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Nil(t, out.LastEvaluatedKey, "the table fits one page")
	var lines []string
	for _, item := range out.Items {
		var m map[string]any
		require.NoError(t, attributevalue.UnmarshalMap(item, &m))
		b, err := json.Marshal(m)
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	slices.Sort(lines)
	return lines
}

// Every route of contract.Routes() whose operation in the OpenAPI document
// has no query parameter refuses a query string: any parameter is a 400
// invalid_parameter naming the first one as sent, a malformed query a 400
// too, and nothing is written or queued, on the POST, PATCH and DELETE
// routes as on the others (found by review: "GET /v1/subscriptions?limit=1"
// answered every subscription, and a query on a write was ignored). The
// same requests without a query succeed, so the query alone was refused;
// the routes the document gives parameters refuse an unknown one by their
// own rules.
func TestQueryOnRoutesWithoutParameters(t *testing.T) {
	rec := &redeliveries{}
	e := newEnv(t, withWebhooks(t, rec))
	requests := routeRequests(t, e, "q.test")
	type R = contract.Route
	sub := strings.TrimPrefix(requests[R{Method: "DELETE", Path: contract.PathSubscription}].path, "/v1/subscriptions/")
	params := documentParams(t, "query")
	require.Equal(t, []string{"status", "event_type", "order", "limit", "cursor"}, params[R{Method: "GET", Path: contract.PathInbox}], "the inbox's parameters, as the document gives them")

	before := e.snapshot(t)
	var plain []R
	for _, r := range contract.Routes() {
		rq, ok := requests[r]
		require.True(t, ok, "no request for %s: add one", r)
		if len(params[r]) > 0 {
			got := e.do(req{method: rq.method, path: rq.path + "?bogus=1", tenant: rq.tenant})
			assert.Equal(t, http.StatusBadRequest, got.code, "%s?bogus=1: %s", r, got.body)
			assert.Equal(t, "invalid_parameter", got.errCode(t), "%s", r)
			assert.Contains(t, string(got.body), `parameter \"bogus\" is unknown`, "%s", r)
			continue
		}
		plain = append(plain, r)
		for _, c := range []struct{ query, msg string }{
			{"limit=1", `parameter \"limit\" is unknown: ` + r.String() + ` takes no query parameter`},
			{"limit=1&cursor=x", `parameter \"limit\" is unknown`},
			{"&&dry_run", `parameter \"dry_run\" is unknown`},
			{"=1", `parameter \"\" is unknown`},
			{"caf%C3%A9=1", `parameter \"café\" is unknown`},
			{"%zz=1", `the query string is malformed: invalid URL escape \"%zz\"; ` + r.String() + ` takes no query parameter`},
			{"a=1;b=2", `the query string is malformed`},
		} {
			rq := rq
			rq.path += "?" + c.query
			got := e.do(rq)
			assert.Equal(t, http.StatusBadRequest, got.code, "%s?%s: %s", r, c.query, got.body)
			assert.Equal(t, "invalid_parameter", got.errCode(t), "%s?%s", r, c.query)
			assert.Contains(t, string(got.body), c.msg, "%s?%s", r, c.query)
		}
	}
	assert.Equal(t, before, e.snapshot(t), "a refused request wrote nothing")
	assert.Empty(t, rec.calls, "a refused request queued nothing")

	// Authentication comes first: without a key, a 401 as before.
	got := e.do(req{method: "GET", path: contract.PathSubscriptions + "?limit=1"})
	assert.Equal(t, http.StatusUnauthorized, got.code, "%s", got.body)

	// Without a query (or with an empty one), each request succeeds:
	// the query alone was refused. The delete goes last.
	del := R{Method: "DELETE", Path: contract.PathSubscription}
	require.Contains(t, plain, del)
	plain = append(slices.DeleteFunc(plain, func(r R) bool { return r == del }), del)
	for i, r := range plain {
		rq := requests[r]
		if i%2 == 1 {
			rq.path += "?&"
		}
		got := e.do(rq)
		assert.True(t, got.code >= 200 && got.code < 300, "%s %s = %d %s, want 2xx", rq.method, rq.path, got.code, got.body)
	}
	stored, err := e.store.GetSubscription(context.Background(), "tenant-a", sub)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound, "deleted at last: %+v", stored)
}
