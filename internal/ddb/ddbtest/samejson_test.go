package ddbtest_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
)

func TestSameJSON(t *testing.T) {
	n := func(s string) json.Number { return json.Number(s) }
	same := [][2]any{
		{map[string]any{"a": n("1e2"), "b": []any{n("1.50"), "x", true, nil}}, map[string]any{"a": n("100"), "b": []any{n("1.5"), "x", true, nil}}},
		{n("-0.000"), n("0")},
	}
	for _, c := range same {
		assert.True(t, ddbtest.SameJSON(c[0], c[1]), "%v ~ %v", c[0], c[1])
	}
	differ := [][2]any{
		{n("1"), n("1.0000000000000000000000000000000000001")},
		{map[string]any{"a": n("1")}, map[string]any{"a": n("1"), "b": nil}},
		{map[string]any{"a": n("1")}, map[string]any{"b": n("1")}},
		{[]any{n("1"), n("2")}, []any{n("2"), n("1")}},
		{[]any{n("1")}, []any{n("1"), n("1")}},
		{n("1"), "1"},
		{map[string]any{}, []any{}},
		{n("x"), n("x")},
	}
	for _, c := range differ {
		assert.False(t, ddbtest.SameJSON(c[0], c[1]), "%v !~ %v", c[0], c[1])
	}
}
