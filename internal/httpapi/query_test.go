package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// Every numeric query parameter (an integer in the OpenAPI document) takes
// only a canonical whole number in range: ASCII decimal digits, no sign,
// no leading zero. strconv.Atoi took "+5", "05" and 29 zeros before a 5
// for 5, so "GET /v1/inbox?limit=%2B5" answered 200 (found by review);
// each hostile spelling is now a 400 invalid_parameter naming the
// parameter, the value as decoded and the accepted form, on every route
// that takes one, and the canonical values in range still pass.
func TestNumericQueryParameters(t *testing.T) {
	e := newEnv(t, withWebhooks(t, &redeliveries{}))
	requests := routeRequests(t, e, "n.test")
	type numeric struct {
		route    contract.Route
		name     string
		min, max int
	}
	var found []numeric
	for r, op := range documentOperations(t) {
		for _, p := range op["parameters"].([]any) {
			pm := p.(map[string]any)
			if s, _ := pm["schema"].(map[string]any); pm["in"] == "query" && s["type"] == "integer" {
				found = append(found, numeric{r, pm["name"].(string), int(s["minimum"].(float64)), int(s["maximum"].(float64))})
			}
		}
	}
	slices.SortFunc(found, func(a, b numeric) int { return strings.Compare(a.route.String()+a.name, b.route.String()+b.name) })
	require.Equal(t, []numeric{
		{contract.Route{Method: "GET", Path: contract.PathInbox}, "limit", 1, 100},
		{contract.Route{Method: "GET", Path: contract.PathSubscriptionAttempts}, "limit", 1, 100},
	}, found, "the numeric query parameters the document gives")

	// The raw query value, and the value the handler decodes from it.
	hostile := []struct{ raw, decoded string }{
		{"%2B5", "+5"}, {"+5", " 5"}, {"-5", "-5"}, {"-0", "-0"}, {"%2B0", "+0"},
		{"05", "05"}, {"005", "005"}, {"010", "010"}, {"00", "00"}, {"0", "0"},
		{strings.Repeat("0", 29) + "5", strings.Repeat("0", 29) + "5"},
		{"123456789012345678901234567890", "123456789012345678901234567890"},
		{"9223372036854775808", "9223372036854775808"}, {"18446744073709551621", "18446744073709551621"},
		{"101", "101"}, {"1000", "1000"},
		{"5.0", "5.0"}, {"5.", "5."}, {".5", ".5"}, {"5e0", "5e0"}, {"1E2", "1E2"},
		{"0x5", "0x5"}, {"0b1", "0b1"}, {"0o5", "0o5"}, {"1_0", "1_0"}, {"5%2C6", "5,6"},
		{"%205", " 5"}, {"5%20", "5 "}, {"%095", "\t5"}, {"5%0A", "5\n"}, {"5%00", "5\x00"},
		{"%EF%BC%95", "５"}, {"%D9%A5", "٥"}, {"%E0%A5%AB", "५"},
		{"", ""}, {"five", "five"}, {"NaN", "NaN"}, {"Infinity", "Infinity"},
	}
	for _, n := range found {
		rq := requests[n.route]
		for _, h := range hostile {
			got := e.do(req{method: rq.method, path: rq.path + "?" + n.name + "=" + h.raw, tenant: rq.tenant})
			assert.Equal(t, http.StatusBadRequest, got.code, "%s?%s=%s: %s", n.route, n.name, h.raw, got.body)
			if got.code != http.StatusBadRequest {
				continue
			}
			assert.Equal(t, "invalid_parameter", got.errCode(t), "%s?%s=%s", n.route, n.name, h.raw)
			want := fmt.Sprintf("%s %q is invalid: use a whole number from %d to %d in decimal digits only (no sign, leading zero, space, decimal point or exponent)", n.name, h.decoded, n.min, n.max)
			assert.Equal(t, want, got.json(t)["error"].(map[string]any)["message"], "%s?%s=%s", n.route, n.name, h.raw)
		}
		for _, v := range []int{n.min, n.min + 1, 9, 10, 50, n.max - 1, n.max} {
			got := e.do(req{method: rq.method, path: fmt.Sprintf("%s?%s=%d", rq.path, n.name, v), tenant: rq.tenant})
			assert.Equal(t, http.StatusOK, got.code, "%s?%s=%d: %s", n.route, n.name, v, got.body)
		}
	}
	// The value is the one read: limit=1 of the inbox's two received
	// events is a page of one.
	got := e.do(req{method: "GET", path: "/v1/inbox?limit=1", tenant: "tenant-a"})
	require.Equal(t, http.StatusOK, got.code, "%s", got.body)
	assert.Len(t, got.json(t)["events"], 1)
	assert.NotNil(t, got.json(t)["next_cursor"])
}
