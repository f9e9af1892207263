package capacity

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/schema"
)

var update = flag.Bool("update", os.Getenv("UPDATE_GOLDEN") != "", "rewrite the generated part of docs/capacity.md")

var db *ddbtest.Local

func TestMain(m *testing.M) { os.Exit(ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true})) }

const doc = "../../../docs/capacity.md"

// Payload sizes of the document: half a KB (an event item of one write
// unit in both profiles), 1 KB and 10 KB of payload JSON.
var payloads = []int{512, 1 << 10, 10 << 10}

// The profiles of the document, in its order.
var profiles = []schema.EventsProfile{schema.ProfileSeed, schema.ProfileLean}

var (
	measureOnce  sync.Once
	measurements []Measurement
	measureErr   error
)

// measure runs Measure once per profile for the package's tests, on
// tables of its own.
func measure(t *testing.T) []Measurement {
	t.Helper()
	measureOnce.Do(func() {
		ctx := context.Background()
		for _, p := range profiles {
			rec := &Recorder{}
			cfg := Config{DB: ddb.NewLocalClient(db.Endpoint, rec.Option), Recorder: rec, Profile: p}
			if cfg.EventsTable, measureErr = db.CreateTableE(ctx, schema.EventsFor(p), "capacity-events"); measureErr != nil {
				return
			}
			if cfg.KeysTable, measureErr = db.CreateTableE(ctx, schema.APIKeys(), "capacity-keys"); measureErr != nil {
				return
			}
			m, err := Measure(ctx, cfg, payloads)
			if measureErr = err; err != nil {
				return
			}
			measurements = append(measurements, m)
		}
	})
	require.NoError(t, measureErr)
	return measurements
}

// TestCapacityDoc measures every operation on DynamoDB Local and checks
// that docs/capacity.md shows exactly these figures; -update rewrites
// them.
func TestCapacityDoc(t *testing.T) {
	gen, err := Render(measure(t)...)
	require.NoError(t, err)

	old, err := os.ReadFile(doc)
	require.NoError(t, err)
	if *update {
		out, err := Splice(string(old), gen)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(doc, []byte(out), 0o644))
		t.Logf("rewrote %s", filepath.Clean(doc))
		return
	}
	got, err := Generated(string(old))
	require.NoError(t, err)
	if got != gen {
		t.Errorf("%s differs from what DynamoDB Local measures now; review the diff, then run go test ./internal/testkit/capacity -update\n--- %s\n+++ measured\n%s",
			filepath.Clean(doc), filepath.Clean(doc), lineDiff(got, gen))
	}
}

// TestMeasuredFacts pins what the document's prose relies on, so a
// change in the store that moves these figures fails here with a
// sentence, not only as a table diff.
func TestMeasuredFacts(t *testing.T) {
	ms := measure(t)
	require.Len(t, ms, 2)
	seed, lean := ms[0], ms[1]
	require.Equal(t, schema.ProfileSeed, seed.Profile)
	require.Equal(t, schema.ProfileLean, lean.Profile)
	rows := func(m Measurement, size int) map[string]Row {
		by := map[string]Row{}
		for _, r := range m.Rows {
			if r.Payload == size {
				by[r.Operation] = r
			}
		}
		return by
	}
	by := rows(seed, 1<<10)
	in, ack := by[OpIngest].Units, by[OpAck].Units
	assert.Equal(t, []string{"PutItem"}, by[OpIngest].Calls, "ingest is one PutItem")
	assert.Equal(t, map[string]float64{TableKey: 2, schema.EventTypeIndex: 2, schema.StatusIndex: 2}, in.Write,
		"a 1 KB event is a 2-unit item written to the table and both ALL-projection indexes")
	assert.Equal(t, map[string]float64{TableKey: 2, schema.EventTypeIndex: 2, schema.StatusIndex: 4}, ack.Write,
		"ack rewrites the item, updates its EventTypeIndex copy, and moves it in StatusIndex (delete + put, 2 units each)")
	assert.Equal(t, 14.0, total(in.Write)+total(ack.Write), "ingest + ack at 1 KB")
	assert.Greater(t, seed.OneUnitPayload, 500, "a one-unit item holds a payload of some hundred bytes")
	assert.Less(t, seed.OneUnitPayload, 1<<10)
	assert.Equal(t, []string{"TransactWriteItems (failed: no capacity reported)", "GetItem"}, by[OpRepeat].Calls,
		"a repeat is a canceled transaction, then a read of the original event")

	// The lean profile: one small StatusIndex entry written at ingest and
	// deleted at ack, nothing else besides the item.
	lby := rows(lean, 1<<10)
	in, ack = lby[OpIngest].Units, lby[OpAck].Units
	assert.Equal(t, map[string]float64{TableKey: 2, schema.StatusIndex: 1}, in.Write, "lean ingest at 1 KB: the item and a key-sized index entry")
	assert.Equal(t, map[string]float64{TableKey: 2, schema.StatusIndex: 1}, ack.Write, "lean ack at 1 KB: the item (larger of before and after) and the entry's delete")
	assert.Equal(t, []string{"Query", "BatchGetItem"}, lby[OpInboxPage].Calls, "a lean inbox page reads the index, then the events")
	assert.Greater(t, total(lby[OpInboxPage].Units.Read), total(by[OpInboxPage].Units.Read), "and pays more read units for it")
	assert.Greater(t, lean.OneUnitPayload, seed.OneUnitPayload, "lean items carry no event_type#timestamp")
	for _, size := range payloads {
		s, l := rows(seed, size), rows(lean, size)
		sw := total(s[OpIngest].Units.Write) + total(s[OpAck].Units.Write)
		lw := total(l[OpIngest].Units.Write) + total(l[OpAck].Units.Write)
		assert.Less(t, lw, sw, "lean writes less at %d bytes", size)
	}
	small := rows(lean, 512)
	assert.Equal(t, 4.0, total(small[OpIngest].Units.Write)+total(small[OpAck].Units.Write),
		"the budget: ingest + ack in 4 write units, met while the item is one unit")
}

// TestRecorderAsksEveryOperation checks the middleware on calls the
// measured operations do not make.
func TestRecorderAsksEveryOperation(t *testing.T) {
	ctx := context.Background()
	rec := &Recorder{}
	client := ddb.NewLocalClient(db.Endpoint, rec.Option)
	table := db.CreateTable(t, schema.APIKeys())
	key := map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: "k"}}
	_, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: {{PutRequest: &types.PutRequest{Item: key}}},
	}})
	require.NoError(t, err)
	_, err = client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key})
	require.NoError(t, err)
	calls := rec.Calls()
	require.Len(t, calls, 2)
	for _, c := range calls {
		assert.NotEmpty(t, c.Consumed, "%s reported capacity", c.Operation)
	}
	u, err := Sum(calls, table)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{TableKey: 2}, u.Write, "two 1-unit writes")
}

func TestRender(t *testing.T) {
	u := func(w, r map[string]float64) Units { return Units{Write: w, Read: r} }
	rows := []Row{
		{Operation: OpIngest, Request: "POST /v1/events", Payload: 1024, Calls: []string{"PutItem"}, Units: u(map[string]float64{TableKey: 2, "B": 2}, nil)},
		{Operation: OpIdempotentIngest, Request: "POST", Payload: 1024, Calls: []string{"TransactWriteItems"}, Units: u(map[string]float64{TableKey: 6}, nil)},
		{Operation: OpRepeat, Request: "POST", Payload: 1024, Calls: []string{"TransactWriteItems (failed: no capacity reported)", "GetItem"}, Unreported: []string{"TransactWriteItems"}, Units: u(nil, map[string]float64{TableKey: 1})},
		{Operation: OpAck, Request: "POST ack", Payload: 1024, Calls: []string{"UpdateItem"}, Units: u(map[string]float64{TableKey: 2, "B": 2}, nil)},
		{Operation: OpInboxPage, Request: "GET", Payload: 1024, Calls: []string{"Query"}, Units: u(nil, map[string]float64{"B": 10})},
		{Operation: OpKeyLookup, Request: "cache miss", Calls: []string{"GetItem"}, Units: u(nil, map[string]float64{TableKey: 0.5})},
	}
	got, err := Render(Measurement{Rows: rows, OneUnitPayload: 700})
	require.NoError(t, err)
	for _, want := range []string{
		"### Seed profile: payload 1 KB (1024 bytes of payload JSON)",
		"| operation | request | DynamoDB calls | WCU table | WCU B | WCU total | RCU table | RCU B | RCU total | $ per million |",
		"| ingest | `POST /v1/events` | PutItem | 2 | 2 | **4** | - | - | **-** | $2.5000 |",
		"| inbox page (50 events) | `GET` | Query | - | - | **-** | - | 10 | **10** | $1.2500 |",
		"authorizer key lookup (cache miss, on the API-keys table): GetItem, 0.5 RCU, $0.0625 per million lookups.",
		"### Seed profile: per million events",
		// 4 + 4 WCU; 10/50 RCU.
		"| 1 KB | ingest + 1/50 inbox page + ack | 8 | 0.200 | $5.0250 |",
		"| 1 KB | idempotent ingest + 1/50 inbox page + ack | 10 | 0.200 | $6.2750 |",
		"it would add 6 WCU ($3.7500 per million repeats)",
		"In the seed profile an event item takes one write unit up to a payload of 700 bytes",
	} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, "side by side", "one profile")
	_, err = Render(Measurement{Rows: rows[:1]})
	assert.Error(t, err, "a missing row")
	_, err = Render()
	assert.Error(t, err, "nothing measured")

	// Two profiles: each its own tables, then side by side.
	lean := slices.Clone(rows[:5])
	lean[0].Units = u(map[string]float64{TableKey: 2, "B": 1}, nil)
	lean[3].Units = u(map[string]float64{TableKey: 2, "B": 1}, nil)
	lean[4].Units = u(nil, map[string]float64{TableKey: 25, "B": 0.5})
	got, err = Render(Measurement{Profile: schema.ProfileSeed, Rows: rows}, Measurement{Profile: schema.ProfileLean, Rows: lean, OneUnitPayload: 750})
	require.NoError(t, err)
	for _, want := range []string{
		"### Lean profile: payload 1 KB (1024 bytes of payload JSON)",
		"In the lean profile an event item takes one write unit up to a payload of 750 bytes",
		"| ingest | `POST /v1/events` | PutItem | 2 | 1 | **3** |",
		"### The profiles side by side",
		"| 1 KB | seed | 4 | 4 | **8** | 10 | $5.0250 |",
		// 3 + 3 WCU; 25.5/50 RCU.
		"| 1 KB | lean | 3 | 3 | **6** | 25.5 | $3.8138 |",
	} {
		assert.Contains(t, got, want)
	}
	assert.Equal(t, 1, strings.Count(got, "authorizer key lookup"), "the key lookup once")
	_, err = Render(Measurement{Profile: schema.ProfileSeed, Rows: rows}, Measurement{Profile: schema.ProfileLean, Rows: lean[:3]})
	assert.ErrorContains(t, err, "lean profile")
}

func TestSplice(t *testing.T) {
	doc := "# T\n\nintro\n" + BeginMarker + "\nold\n" + EndMarker + "\nafter\n"
	out, err := Splice(doc, "new\nlines")
	require.NoError(t, err)
	assert.Equal(t, "# T\n\nintro\n"+BeginMarker+"\nnew\nlines\n"+EndMarker+"\nafter\n", out)
	gen, err := Generated(out)
	require.NoError(t, err)
	assert.Equal(t, "new\nlines", gen)
	_, err = Splice("no markers", "x")
	assert.Error(t, err)
	_, err = Generated("no markers")
	assert.Error(t, err)
}

// lineDiff lists the lines only in a (-) or only in b (+), in order.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	inA, inB := map[string]int{}, map[string]int{}
	for _, l := range al {
		inA[l]++
	}
	for _, l := range bl {
		inB[l]++
	}
	var out strings.Builder
	for _, l := range al {
		if inB[l] == 0 {
			out.WriteString("- " + l + "\n")
		}
	}
	for _, l := range bl {
		if inA[l] == 0 {
			out.WriteString("+ " + l + "\n")
		}
	}
	return out.String()
}

// TestWriteBudget prints the ingest + ack budget lines (make bench shows
// them, from go test -v) and checks them against the measurement.
func TestWriteBudget(t *testing.T) {
	ms := measure(t)
	lines, err := BudgetLines(ms...)
	require.NoError(t, err)
	require.Len(t, lines, len(payloads)*len(profiles))
	for _, l := range lines {
		t.Log(l)
	}
	assert.Equal(t, "ingest + ack, payload 512 B  lean profile:   4 WCU  (budget 4)", lines[1])
	assert.Equal(t, "ingest + ack, payload 1 KB   seed profile:  14 WCU! (budget 4)", lines[2])
	_, err = BudgetLines()
	assert.Error(t, err)
	_, err = BudgetLines(Measurement{Rows: []Row{{Operation: OpIngest, Payload: 1}}})
	assert.Error(t, err)
}
