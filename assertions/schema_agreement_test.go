package assertions

import (
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
	"github.com/triggers-dev/triggers/schema"
)

// shape is the part of a table definition that CloudFormation and
// CreateTable share, normalized so the two can be compared.
type shape struct {
	Keys       []string            // "name:HASH", "name:RANGE"
	Attributes []string            // "name:S", sorted
	Indexes    map[string][]string // index -> keys, then "projection:TYPE", then "include:attr"...
	Stream     string
	TTL        string
}

func shapeFromCreateTable(s schema.Table) shape {
	in := ddb.CreateTableInput(s, "x")
	out := shape{Indexes: map[string][]string{}}
	for _, k := range in.KeySchema {
		out.Keys = append(out.Keys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
	}
	for _, a := range in.AttributeDefinitions {
		out.Attributes = append(out.Attributes, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
	}
	sort.Strings(out.Attributes)
	for _, g := range in.GlobalSecondaryIndexes {
		var d []string
		for _, k := range g.KeySchema {
			d = append(d, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		d = append(d, "projection:"+string(g.Projection.ProjectionType))
		for _, a := range g.Projection.NonKeyAttributes {
			d = append(d, "include:"+a)
		}
		out.Indexes[aws.ToString(g.IndexName)] = d
	}
	if in.StreamSpecification != nil {
		out.Stream = string(in.StreamSpecification.StreamViewType)
	}
	if ttl := ddb.UpdateTimeToLiveInput(s, "x"); ttl != nil {
		out.TTL = aws.ToString(ttl.TimeToLiveSpecification.AttributeName)
	}
	return out
}

func shapeFromCfn(p map[string]any) shape {
	out := shape{Indexes: map[string][]string{}}
	keys := func(v any) (ks []string) {
		for _, k := range v.([]any) {
			km := k.(map[string]any)
			ks = append(ks, km["AttributeName"].(string)+":"+km["KeyType"].(string))
		}
		return ks
	}
	out.Keys = keys(p["KeySchema"])
	for _, a := range p["AttributeDefinitions"].([]any) {
		am := a.(map[string]any)
		out.Attributes = append(out.Attributes, am["AttributeName"].(string)+":"+am["AttributeType"].(string))
	}
	sort.Strings(out.Attributes)
	if gsis, ok := p["GlobalSecondaryIndexes"].([]any); ok {
		for _, g := range gsis {
			gm := g.(map[string]any)
			d := keys(gm["KeySchema"])
			proj := gm["Projection"].(map[string]any)
			d = append(d, "projection:"+proj["ProjectionType"].(string))
			if nk, ok := proj["NonKeyAttributes"].([]any); ok {
				for _, a := range nk {
					d = append(d, "include:"+a.(string))
				}
			}
			out.Indexes[gm["IndexName"].(string)] = d
		}
	}
	if ss, ok := p["StreamSpecification"].(map[string]any); ok {
		out.Stream = ss["StreamViewType"].(string)
	}
	if ttl, ok := p["TimeToLiveSpecification"].(map[string]any); ok && ttl["Enabled"] == true {
		out.TTL = ttl["AttributeName"].(string)
	}
	return out
}

// Every table in every synthesized template (but the ad-hoc one of
// stackTableMonitoring) is exactly one schema of the
// catalog, seen through CreateTableInput (what local development creates on
// DynamoDB Local), and every schema of the catalog is deployed somewhere.
func TestCloudFormationAgreesWithCreateTableInput(t *testing.T) {
	catalog := map[string]shape{}
	for _, s := range schema.Catalog() {
		catalog[s.Name] = shapeFromCreateTable(s)
	}
	deployed := map[string]bool{}
	for stack, tp := range templates {
		if stack == stackTableMonitoring {
			continue // an ad-hoc table (a replica, a GSI) that exercises every TableMonitoring alarm
		}
		for id, r := range cdktest.Resources(tp, "AWS::DynamoDB::Table") {
			got := shapeFromCfn(cdktest.Props(r))
			var matches []string
			for name, want := range catalog {
				if assert.ObjectsAreEqual(want, got) {
					matches = append(matches, name)
				}
			}
			require.Len(t, matches, 1, "%s/%s matches no schema (or several): %s", stack, id, jsonOf(got))
			deployed[matches[0]] = true
		}
	}
	var missing []string
	for name := range catalog {
		if !deployed[name] {
			missing = append(missing, name)
		}
	}
	assert.Empty(t, missing, "schemas no stack deploys: %s", strings.Join(missing, ", "))
}
