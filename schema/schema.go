// Package schema describes DynamoDB tables in plain Go.
//
// One description has three users: the CDK constructs turn it into an
// AWS::DynamoDB::Table, local development and tests turn it into a
// CreateTable call on DynamoDB Local, and the runtime store takes attribute
// and index names from it. Infrastructure and code therefore cannot drift
// apart. The package imports no jsii code, so Lambda binaries that use it
// stay small.
package schema

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// AttributeType is the DynamoDB scalar type of a key attribute.
type AttributeType string

// Key attribute types. DynamoDB keys are strings, numbers or binary.
const (
	String AttributeType = "S"
	Number AttributeType = "N"
	Binary AttributeType = "B"
)

// Attribute is a key attribute: a name and its scalar type.
type Attribute struct {
	Name string
	Type AttributeType
}

// S returns a string attribute named name.
func S(name string) Attribute { return Attribute{Name: name, Type: String} }

// N returns a number attribute named name.
func N(name string) Attribute { return Attribute{Name: name, Type: Number} }

// B returns a binary attribute named name.
func B(name string) Attribute { return Attribute{Name: name, Type: Binary} }

// ProjectionType says which attributes a secondary index copies.
type ProjectionType string

// Projection types, as DynamoDB names them.
const (
	ProjectAll      ProjectionType = "ALL"
	ProjectKeysOnly ProjectionType = "KEYS_ONLY"
	ProjectInclude  ProjectionType = "INCLUDE"
)

// Projection is the set of attributes a secondary index copies from the
// table. NonKeyAttributes is used with ProjectInclude only.
type Projection struct {
	Type             ProjectionType
	NonKeyAttributes []string
}

// All projects every attribute.
func All() Projection { return Projection{Type: ProjectAll} }

// KeysOnly projects the table and index keys only.
func KeysOnly() Projection { return Projection{Type: ProjectKeysOnly} }

// Include projects the keys plus the named attributes.
func Include(attrs ...string) Projection {
	return Projection{Type: ProjectInclude, NonKeyAttributes: attrs}
}

// Index is a global secondary index.
type Index struct {
	// Name is the index name, 3-255 characters of [A-Za-z0-9_.-].
	Name string
	// PartitionKey is the index partition key.
	PartitionKey Attribute
	// SortKey is the optional index sort key.
	SortKey *Attribute
	// Projection defaults to ALL when its Type is empty.
	Projection Projection
	// Sparse documents that only some items carry the index keys. DynamoDB
	// needs nothing for that; it is recorded for readers and checks.
	Sparse bool
}

// StreamView is the DynamoDB Streams view type; empty means no stream.
type StreamView string

// Stream view types.
const (
	StreamNone            StreamView = ""
	StreamKeysOnly        StreamView = "KEYS_ONLY"
	StreamNewImage        StreamView = "NEW_IMAGE"
	StreamOldImage        StreamView = "OLD_IMAGE"
	StreamNewAndOldImages StreamView = "NEW_AND_OLD_IMAGES"
)

// Table describes one DynamoDB table.
type Table struct {
	// Name is a short logical name ("events"), not a physical table name:
	// deployed tables get generated names.
	Name string
	// PartitionKey is the table's partition (HASH) key.
	PartitionKey Attribute
	// SortKey is the optional sort (RANGE) key.
	SortKey *Attribute
	// GlobalIndexes are the table's GSIs, at most 20.
	GlobalIndexes []Index
	// TTLAttribute names the Number attribute (epoch seconds) that DynamoDB
	// expires items by; empty means no TTL.
	TTLAttribute string
	// Stream is the stream view type; StreamNone for no stream.
	Stream StreamView
}

// Limits DynamoDB enforces on table definitions.
const (
	MaxGlobalIndexes        = 20
	MaxProjectedNonKeyAttrs = 100
	maxAttributeNameBytes   = 255
	minIndexNameLen         = 3
	maxIndexNameLen         = 255
)

var indexNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Ptr returns a pointer to a; handy for SortKey fields.
func Ptr(a Attribute) *Attribute { return &a }

// Index returns the GSI named name, or false.
func (t Table) Index(name string) (Index, bool) {
	for _, ix := range t.GlobalIndexes {
		if ix.Name == name {
			return ix, true
		}
	}
	return Index{}, false
}

// KeyAttributes returns every attribute used as a key by the table or an
// index, each once, sorted by name. These are CloudFormation's
// AttributeDefinitions.
func (t Table) KeyAttributes() []Attribute {
	seen := map[string]Attribute{}
	add := func(a *Attribute) {
		if a != nil {
			seen[a.Name] = *a
		}
	}
	add(&t.PartitionKey)
	add(t.SortKey)
	for i := range t.GlobalIndexes {
		add(&t.GlobalIndexes[i].PartitionKey)
		add(t.GlobalIndexes[i].SortKey)
	}
	out := make([]Attribute, 0, len(seen))
	for _, a := range seen {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// projection returns the index projection with the ALL default applied.
func (ix Index) projection() Projection {
	if ix.Projection.Type == "" {
		return All()
	}
	return ix.Projection
}

// EffectiveProjection returns the index projection, ALL when unset.
func (ix Index) EffectiveProjection() Projection { return ix.projection() }

// Validate reports every problem with the table definition, each naming the
// bad value and the fix. A nil result means DynamoDB will accept it.
func (t Table) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	if strings.TrimSpace(t.Name) == "" {
		bad("table name is empty: give the schema a short logical name such as \"events\"")
	}
	types := map[string]AttributeType{}
	checkAttr := func(where string, a *Attribute) {
		if a == nil {
			return
		}
		switch {
		case a.Name == "":
			bad("%s of table %q has an empty name: name the key attribute", where, t.Name)
		case len(a.Name) > maxAttributeNameBytes:
			bad("%s %q of table %q is %d bytes: key attribute names are at most %d bytes", where, a.Name, t.Name, len(a.Name), maxAttributeNameBytes)
		}
		switch a.Type {
		case String, Number, Binary:
		default:
			bad("%s %q of table %q has type %q: use schema.String, schema.Number or schema.Binary", where, a.Name, t.Name, a.Type)
		}
		if prev, ok := types[a.Name]; ok && prev != a.Type {
			bad("attribute %q of table %q is declared both %s and %s: a key attribute has one type everywhere it is used", a.Name, t.Name, prev, a.Type)
		}
		types[a.Name] = a.Type
	}
	checkAttr("partition key", &t.PartitionKey)
	checkAttr("sort key", t.SortKey)
	if t.SortKey != nil && t.SortKey.Name == t.PartitionKey.Name && t.SortKey.Name != "" {
		bad("sort key %q of table %q is also its partition key: use two different attributes", t.SortKey.Name, t.Name)
	}

	if n := len(t.GlobalIndexes); n > MaxGlobalIndexes {
		bad("table %q has %d global secondary indexes: DynamoDB allows at most %d, remove %d", t.Name, n, MaxGlobalIndexes, n-MaxGlobalIndexes)
	}
	names := map[string]bool{}
	projected := 0
	for i := range t.GlobalIndexes {
		ix := &t.GlobalIndexes[i]
		switch {
		case len(ix.Name) < minIndexNameLen || len(ix.Name) > maxIndexNameLen:
			bad("index name %q of table %q is %d characters: index names are %d-%d characters", ix.Name, t.Name, len(ix.Name), minIndexNameLen, maxIndexNameLen)
		case !indexNameRE.MatchString(ix.Name):
			bad("index name %q of table %q has characters DynamoDB rejects: use only letters, digits, '_', '-' and '.'", ix.Name, t.Name)
		}
		if names[ix.Name] {
			bad("index name %q is used twice in table %q: give each index its own name", ix.Name, t.Name)
		}
		names[ix.Name] = true
		where := fmt.Sprintf("index %q", ix.Name)
		checkAttr(where+" partition key", &ix.PartitionKey)
		checkAttr(where+" sort key", ix.SortKey)
		p := ix.projection()
		switch p.Type {
		case ProjectAll, ProjectKeysOnly:
			if len(p.NonKeyAttributes) > 0 {
				bad("index %q of table %q lists non-key attributes with projection %s: use schema.Include(...) to project chosen attributes", ix.Name, t.Name, p.Type)
			}
		case ProjectInclude:
			if len(p.NonKeyAttributes) == 0 {
				bad("index %q of table %q has projection INCLUDE with no attributes: list them, or use schema.KeysOnly()", ix.Name, t.Name)
			}
			seen := map[string]bool{}
			for _, a := range p.NonKeyAttributes {
				if a == "" || seen[a] {
					bad("index %q of table %q projects attribute %q twice or empty: list each attribute once", ix.Name, t.Name, a)
				}
				seen[a] = true
			}
			projected += len(p.NonKeyAttributes)
		default:
			bad("index %q of table %q has projection type %q: use ALL, KEYS_ONLY or INCLUDE", ix.Name, t.Name, p.Type)
		}
	}
	if projected > MaxProjectedNonKeyAttrs {
		bad("table %q projects %d non-key attributes across its indexes: DynamoDB allows at most %d in all", t.Name, projected, MaxProjectedNonKeyAttrs)
	}

	if t.TTLAttribute != "" {
		if t.TTLAttribute == t.PartitionKey.Name || (t.SortKey != nil && t.TTLAttribute == t.SortKey.Name) {
			bad("TTL attribute %q of table %q is also a primary key attribute: expire items by a separate Number attribute such as \"ttl\"", t.TTLAttribute, t.Name)
		} else if typ, ok := types[t.TTLAttribute]; ok && typ != Number {
			bad("TTL attribute %q of table %q is an index key of type %s: DynamoDB expires only Number (epoch seconds) attributes", t.TTLAttribute, t.Name, typ)
		}
	}
	switch t.Stream {
	case StreamNone, StreamKeysOnly, StreamNewImage, StreamOldImage, StreamNewAndOldImages:
	default:
		bad("stream view %q of table %q is unknown: use KEYS_ONLY, NEW_IMAGE, OLD_IMAGE or NEW_AND_OLD_IMAGES", t.Stream, t.Name)
	}
	return errors.Join(errs...)
}
