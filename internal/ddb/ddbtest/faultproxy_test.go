package ddbtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/schema"
)

// endingTB is a testing.TB whose cleanups run when end is called: the
// end of a test, as a failed require ends it.
type endingTB struct {
	testing.TB
	cleanups []func()
}

func (e *endingTB) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }

func (e *endingTB) end() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

// A test that ends while LateCall still holds a call (a require failing
// before the land) ends: the held call is dropped, not landed. Before,
// the proxy's cleanup waited for the held call's handler, which waited
// for the land, and the test hung until the package's timeout.
func TestLateCallStillHeldWhenTheTestEnds(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	ending := &endingTB{TB: t}
	proxy := ddbtest.NewFaultProxy(ending, db.Endpoint)
	// The production attempt timeout: the held attempt waits it out, and
	// the resend must go through within it (this engine's first update).
	o := ddb.Options{EndpointURL: proxy.URL, AttemptTimeout: ddb.DefaultAttemptTimeout}
	client := ddb.ClientFromConfig(ddb.LocalConfig(o), o)
	key := map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: "k"}}
	_ = proxy.LateCall("UpdateItem")
	_, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key,
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	})
	require.NoError(t, err, "the SDK's resend of the held call")
	require.Equal(t, 2, proxy.Calls("UpdateItem"), "the held call and the SDK's resend")

	ended := make(chan struct{})
	go func() {
		ending.end()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the proxy's cleanup waits for the call LateCall holds: a test ending before its land hangs")
	}
	out, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberN{Value: "1"}, out.Item["n"], "the held call landed as the test ended: the resend's add alone was to count")
}
