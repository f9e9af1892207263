package sqsesm

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Lambda's rules for a partial batch response.
func TestBatchItemFailures(t *testing.T) {
	batch := map[string]bool{"m1": true, "m2": true}
	for _, tc := range []struct {
		resp string
		want map[string]bool
		err  string
	}{
		{``, nil, ""},
		{`null`, nil, ""},
		{`{}`, nil, ""},
		{`{"batchItemFailures":null}`, nil, ""},
		{`{"batchItemFailures":[]}`, map[string]bool{}, ""},
		{`{"batchItemFailures":[{"itemIdentifier":"m2"}]}`, map[string]bool{"m2": true}, ""},
		{`{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"m2"}]}`, map[string]bool{"m1": true, "m2": true}, ""},
		{`"ok"`, nil, "not a JSON object"},
		{`{"batchItemFailures":`, nil, "not a JSON object"},
		{`{"batchItemFailures":{}}`, nil, "not a list of objects"},
		{`{"batchItemFailures":[{"itemIdentifier":""}]}`, nil, "without a non-empty itemIdentifier"},
		{`{"batchItemFailures":[{"itemIdentifier":null}]}`, nil, "without a non-empty itemIdentifier"},
		{`{"batchItemFailures":[{"id":"m1"}]}`, nil, "without a non-empty itemIdentifier"},
		{`{"batchItemFailures":[{"itemIdentifier":7}]}`, nil, "without a non-empty itemIdentifier"},
		{`{"batchItemFailures":[{"itemIdentifier":"m3"}]}`, nil, `"m3" is not a messageId of the batch`},
	} {
		got, err := batchItemFailures([]byte(tc.resp), batch)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "batchItemFailures(%s)", tc.resp)
			continue
		}
		assert.NoError(t, err, "batchItemFailures(%s)", tc.resp)
		assert.Equal(t, len(tc.want), len(got), "batchItemFailures(%s) = %v, want %v", tc.resp, got, tc.want)
		for id := range tc.want {
			assert.True(t, got[id], "batchItemFailures(%s) = %v, want %v", tc.resp, got, tc.want)
		}
	}
}

func TestPayload(t *testing.T) {
	assert.Equal(t, `{"Records":[]}`, string(Payload()))
	assert.Equal(t, `{"Records":[{"a":1},{"b":2}]}`, string(Payload([]byte(`{"a":1}`), []byte(`{"b":2}`))))
}
