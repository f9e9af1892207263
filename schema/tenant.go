package schema

// Tables of the tenant design (seed 003): the API-keys table is APIKeys
// (keyed by the key's SHA-256, see apikeys.go); the events table is below.

// Attribute and index names of seed 003's Events table.
const (
	TenantAttrTenantID = "tenant_id"
	TenantAttrEventID  = "event_id"
	// TenantAttrGSI1SK holds status + "#" + timestamp (epoch ms, 13 digits).
	TenantAttrGSI1SK = "gsi1sk"
	// TenantAttrGSI2SK holds event_type + "#" + timestamp (epoch ms).
	TenantAttrGSI2SK     = "gsi2sk"
	TenantStatusIndex    = "status-index"
	TenantEventTypeIndex = "event-type-index"
)

// TenantEvents is seed 003's Events table: tenant_id, event_id (UUID v4);
// status-index (tenant_id, gsi1sk) and, when withEventTypeIndex, the
// seed's optional event-type-index (tenant_id, gsi2sk), projecting ALL.
func TenantEvents(withEventTypeIndex bool) Table {
	t := Table{
		Name:         "tenant-events",
		PartitionKey: S(TenantAttrTenantID),
		SortKey:      Ptr(S(TenantAttrEventID)),
		GlobalIndexes: []Index{
			{Name: TenantStatusIndex, PartitionKey: S(TenantAttrTenantID), SortKey: Ptr(S(TenantAttrGSI1SK)), Projection: All()},
		},
	}
	if withEventTypeIndex {
		t.Name = "tenant-events-with-type-index"
		t.GlobalIndexes = append(t.GlobalIndexes, Index{
			Name: TenantEventTypeIndex, PartitionKey: S(TenantAttrTenantID), SortKey: Ptr(S(TenantAttrGSI2SK)), Projection: All(),
		})
	}
	return t
}
