package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// unstorable are payloads that bypass the validator and that DynamoDB
// Local 3.3.1 rejects, each with a different ValidationException message.
var unstorable = map[string]map[string]any{
	"zero with a huge exponent": {"n": json.Number("0e2147483648")},
	"unparseable number":        {"n": json.Number("1e2147483648")},
	"empty key":                 {"": "x"},
	"too deep":                  nest(32),
	"39 digits":                 {"n": json.Number("123456789012345678901234567890123456789")},
	"item too large":            {"s": strings.Repeat("x", 410_000)},
}

func nest(levels int) map[string]any {
	var v any = nil
	for i := 0; i < levels; i++ {
		v = map[string]any{"a": v}
	}
	return v.(map[string]any)
}

// TestWriteRejectionsAreInvalidItem: whatever DynamoDB rejects in an item
// the store writes is event.ErrInvalidItem (a 400), on every write path.
// "A value provided cannot be converted into a number" used to be an
// unclassified error (a 500).
func TestWriteRejectionsAreInvalidItem(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	for name, p := range unstorable {
		t.Run(name, func(t *testing.T) {
			err := st.Put(ctx, "tenant-a", newEvent(t, "t", p))
			assert.ErrorIs(t, err, event.ErrInvalidItem, "Put")
			_, _, err = st.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", p), "key-"+name, "hash")
			assert.ErrorIs(t, err, event.ErrInvalidItem, "PutIdempotent")
			errs := st.PutBatch(ctx, "tenant-a", []event.Event{newEvent(t, "t", p)})
			assert.ErrorIs(t, errs[0], event.ErrInvalidItem, "PutBatch")
		})
	}
}

// TestPutBatchStoresValidBesideInvalid: each entry is its own write, so
// the valid entries are stored and only the bad one is reported.
func TestPutBatchStoresValidBesideInvalid(t *testing.T) {
	ctx := context.Background()
	for name, p := range unstorable {
		t.Run(name, func(t *testing.T) {
			table := db.CreateTable(t, schema.Events())
			st := store.New(db.Client, table)
			evs := []event.Event{
				newEvent(t, "t", map[string]any{"i": json.Number("0")}),
				newEvent(t, "t", p),
				newEvent(t, "t", map[string]any{"i": json.Number("2")}),
			}
			errs := st.PutBatch(ctx, "tenant-a", evs)
			require.Len(t, errs, 3)
			assert.NoError(t, errs[0])
			assert.ErrorIs(t, errs[1], event.ErrInvalidItem)
			assert.False(t, errors.Is(errs[1], event.ErrUnavailable))
			assert.NoError(t, errs[2])
			for _, i := range []int{0, 2} {
				got, err := st.Get(ctx, "tenant-a", evs[i].ID)
				require.NoError(t, err, "entry %d not stored", i)
				assert.Equal(t, evs[i].Payload, got.Payload)
			}
			assert.Len(t, scan(t, table), 2)
		})
	}
}
