package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/loadmodel"
	"github.com/triggers-dev/triggers/schema"
)

func TestScaleBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-scale-rate", "0"}, {"-scale-rate", "-5"}, {"-scale-seconds", "0"}, {"-scale-shards", "0"}, {"-scale-shards", "8,x"},
		{"-scale-split-after", "0"}, {"-scale-warmup", "-1"}, {"-scale-profile", "fat"}, {"-scale-concurrency", "0"},
		{"-payload", "5"}, {"-duration", "0s"}, {"-warmup", "-1s"},
	} {
		args = append([]string{"-scenario", scenarioScale, "-scale-local=false"}, args...)
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (stderr %s)", args, code, errb.String())
		}
	}
}

// TestScaleModelOnly runs the model's part at the real rate (a short
// measured window) and checks its conclusions: 500 events/s unsharded,
// none throttled at 32 shards, the fewest shards at or above the floor of
// 20.
func TestScaleModelOnly(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-scenario", scenarioScale, "-scale-local=false", "-scale-seconds", "20", "-json"}, &out, &errb)
	require.Equal(t, 0, code, "stderr: %s", errb.String())
	var rep ScaleReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	snakeCaseKeys(t, out.Bytes())
	assert.Equal(t, schema.ProfileSeed, rep.Profile)
	assert.Equal(t, []loadmodel.Structure{{Name: "table", WCU: 2}, {Name: schema.EventTypeIndex, WCU: 2}, {Name: schema.StatusIndex, WCU: 2}}, rep.Model.Config.Writes,
		"a 1 KB event: 2 WCU in the table and in each index (docs/capacity.md)")
	assert.Equal(t, 20, rep.Model.MinShardsBound)
	assert.GreaterOrEqual(t, rep.Model.MinShards, 20)
	assert.LessOrEqual(t, rep.Model.MinShards, 32)
	assert.InDelta(t, 500, rep.Model.RampMax, 1e-9)
	byName := map[string]loadmodel.Scenario{}
	for _, s := range rep.Model.Scenarios {
		byName[s.Name] = s
	}
	assert.EqualValues(t, 500*20, byName["unsharded"].Result.Accepted)
	assert.Zero(t, byName["sharded N=32"].Result.Throttled)
	assert.Positive(t, byName["sharded N=16"].Result.Throttled)
	assert.Nil(t, rep.Local, "-scale-local=false")
}

// TestScaleLocal drives DynamoDB Local (started by the tool) briefly with
// both key sets: every PutItem succeeds, each key set's events land on
// its keys, and DynamoDB Local bills the item as the model does (the tool
// fails otherwise). It asserts no times.
func TestScaleLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"-scenario", scenarioScale, "-scale-rate", "2000", "-scale-seconds", "5", "-scale-shards", "4,8",
		"-scale-concurrency", "1,4", "-duration", "300ms", "-warmup", "200ms", "-json"}, &out, &errb)
	require.Equal(t, 0, code, "stderr: %s", errb.String())
	var rep ScaleReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	assert.Equal(t, rep.Model.Config.Writes, rep.Measured)
	require.Len(t, rep.Local, 4, "two key sets at two concurrencies")
	for _, c := range rep.Local {
		assert.Zero(t, c.Stats.Errors, "%d keys at %d: %s", c.Shards, c.Concurrency, c.Stats.FirstError)
		assert.Positive(t, c.Stats.Throughput)
		require.Len(t, c.PerShard, c.Shards)
		sum := 0
		for _, n := range c.PerShard {
			sum += n
		}
		assert.Equal(t, c.Stats.Count, sum, "every event counted on its shard")
	}
	assert.Equal(t, 1, rep.Local[0].Shards)
	assert.Equal(t, rep.Model.MinShards, rep.Local[3].Shards, "the sharded key set is the fewest shards without throttles")
}

// snakeCaseKeys checks that every object key of the JSON document is
// snake_case, as in the rest of -json's reports (the model's fields were
// Go's CamelCase), except the keys of "causes", which are the causes.
func snakeCaseKeys(t *testing.T, doc []byte) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(doc, &v))
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				assert.Regexp(t, snake, k, "key %s.%s", path, k)
				if k != "causes" {
					walk(path+"."+k, e)
				}
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("", v)
}
