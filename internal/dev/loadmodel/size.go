package loadmodel

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/schema"
)

// WriteUnitBytes is the item size one write unit covers: a write of an
// item (or index entry) of n bytes takes ceil(n/1024) units.
const WriteUnitBytes = 1024

// ItemSize returns the size DynamoDB bills an item at, by the rules of
// "DynamoDB item sizes and formats" (CapacityUnitCalculations): the sum,
// over the attributes, of the name's UTF-8 bytes and the value's size. A
// string is its UTF-8 bytes; a binary its raw bytes; a number 1 byte per
// two significant digits (leading and trailing zeros trimmed) plus 1; a
// boolean or null 1; a list or map 3 bytes plus its elements, each
// element 1 byte more (a map element's size includes its name); a set the
// sum of its members.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range v.Value {
			n += 1 + len(name) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

// numberSize is 1 byte per two significant digits, plus 1.
func numberSize(s string) int {
	mant, _, _ := strings.Cut(strings.ToLower(s), "e")
	mant = strings.TrimLeft(mant, "+-")
	mant = strings.Replace(mant, ".", "", 1)
	mant = strings.Trim(mant, "0")
	return (len(mant)+1)/2 + 1
}

// WriteUnits returns the write units of one write of an item (or index
// entry) of size bytes: one per 1 KB, rounded up, at least one.
func WriteUnits(size int) int {
	return max(1, (size+WriteUnitBytes-1)/WriteUnitBytes)
}

// Structure is the table or one of its global secondary indexes: each has
// its own partitions, and a write of an item is a write to the table and
// to every index the item appears in.
type Structure struct {
	// Name is "table" or the index name.
	Name string `json:"name"`
	// WCU is the write units one event item takes there.
	WCU int `json:"wcu"`
}

// TableStructure is the Name of the table in a Structure list.
const TableStructure = "table"

// EventWrites returns the write units an item costs in the table t and in
// each of its global secondary indexes the item appears in (it carries
// the index's key attributes), in the order of t.GlobalIndexes. An index
// entry holds the table's keys, the index keys and the projected
// attributes (ALL: the whole item); DynamoDB bills its write by the
// entry's size as it bills the table's (docs/capacity.md measures both).
func EventWrites(t schema.Table, item map[string]types.AttributeValue) []Structure {
	out := []Structure{{Name: TableStructure, WCU: WriteUnits(ItemSize(item))}}
	for _, ix := range t.GlobalIndexes {
		if _, ok := item[ix.PartitionKey.Name]; !ok {
			continue
		}
		if ix.SortKey != nil {
			if _, ok := item[ix.SortKey.Name]; !ok {
				continue
			}
		}
		entry := item
		if ix.Projection.Type != schema.ProjectAll && ix.Projection.Type != "" {
			keep := []string{t.PartitionKey.Name, ix.PartitionKey.Name}
			if t.SortKey != nil {
				keep = append(keep, t.SortKey.Name)
			}
			if ix.SortKey != nil {
				keep = append(keep, ix.SortKey.Name)
			}
			if ix.Projection.Type == schema.ProjectInclude {
				keep = append(keep, ix.Projection.NonKeyAttributes...)
			}
			entry = map[string]types.AttributeValue{}
			for _, k := range keep {
				if v, ok := item[k]; ok {
					entry[k] = v
				}
			}
		}
		out = append(out, Structure{Name: ix.Name, WCU: WriteUnits(ItemSize(entry))})
	}
	return out
}
