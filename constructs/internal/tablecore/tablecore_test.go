package tablecore

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/triggers-dev/triggers/schema"
)

// TestPromotedMethodsOnlyRead pins Core's method set (Accessors' included):
// dynamotable.Table, eventstore.EventsTable and triggersapi.ApiKeysTable
// embed *Core, so each of these methods is promoted to their public API.
// They read the table or grant on it; nothing here may set Core's state
// (that is InitAccessors and SetResource, functions of this internal
// package).
func TestPromotedMethodsOnlyRead(t *testing.T) {
	want := []string{
		"BillingMode", "CfnGlobalTable", "CfnTable", "EncryptionKey",
		"GrantReadData", "GrantReadDataOnIndexes", "GrantReadWriteData", "GrantStreamRead", "GrantWriteData",
		"IndexNames", "L2", "L2V2", "Metric", "MetricConsumedReadCapacityUnits", "MetricConsumedWriteCapacityUnits",
		"MetricForIndex", "MetricReadThrottleEvents", "MetricSuccessfulRequestLatency", "MetricWriteThrottleEvents",
		"ReplicaRegions", "Resource", "Schema", "TableArn", "TableIndexArn", "TableName", "TableStreamArn",
	}
	typ := reflect.TypeOf(&Core{})
	var got []string
	for i := range typ.NumMethod() {
		got = append(got, typ.Method(i).Name)
	}
	slices.Sort(got)
	for _, m := range got {
		if !slices.Contains(want, m) {
			t.Errorf("*Core has method %s, which the public table types promote: if it changes the table's state make it a function of this package; if it only reads, add it here", m)
		}
	}
	for _, m := range want {
		if !slices.Contains(got, m) {
			t.Errorf("*Core has no method %s: the public table types lost it", m)
		}
	}
}

// TestSchemaIsACopy checks that neither the schema given to InitAccessors
// nor the one Schema returns shares memory with the table's own: changing
// them does not change the table's grants, index ARNs or metrics.
func TestSchemaIsACopy(t *testing.T) {
	given := schema.Table{
		Name: "orders", PartitionKey: schema.S("pk"), SortKey: schema.Ptr(schema.S("sk")),
		GlobalIndexes: []schema.Index{{
			Name: "ByStatus", PartitionKey: schema.S("status"), SortKey: schema.Ptr(schema.N("at")),
			Projection: schema.Include("total"),
		}},
	}
	want := schema.Table{
		Name: "orders", PartitionKey: schema.S("pk"), SortKey: schema.Ptr(schema.S("sk")),
		GlobalIndexes: []schema.Index{{
			Name: "ByStatus", PartitionKey: schema.S("status"), SortKey: schema.Ptr(schema.N("at")),
			Projection: schema.Include("total"),
		}},
	}
	b := &Accessors{}
	InitAccessors(b, nil, given, nil)
	mutate := func(s schema.Table) {
		s.SortKey.Name = "changed"
		s.GlobalIndexes[0].Name = "Changed"
		s.GlobalIndexes[0].SortKey.Name = "changed"
		s.GlobalIndexes[0].Projection.NonKeyAttributes[0] = "changed"
	}
	mutate(given)
	if got := b.Schema(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after changing the schema given to InitAccessors, Schema() = %s, want %s", describe(got), describe(want))
	}
	mutate(b.Schema())
	if got := b.Schema(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after changing a Schema() result, Schema() = %s, want %s", describe(got), describe(want))
	}
	if got := b.IndexNames(); !slices.Equal(got, []string{"ByStatus"}) {
		t.Errorf("IndexNames() = %v, want [ByStatus]", got)
	}
}

// describe shows the parts of s that TestSchemaIsACopy changes.
func describe(s schema.Table) string {
	ix := s.GlobalIndexes[0]
	return fmt.Sprintf("{SortKey: %s, index %s with SortKey %s, projecting %v}", s.SortKey.Name, ix.Name, ix.SortKey.Name, ix.Projection.NonKeyAttributes)
}
