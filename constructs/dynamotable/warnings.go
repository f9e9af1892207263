package dynamotable

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/triggers-dev/triggers/schema"
)

// Warning is a design risk found in a schema: it synthesizes, but a reader
// should look twice. ID is the acknowledgement id for
// awscdk.Annotations_Of(scope).AcknowledgeWarning.
type Warning struct {
	ID      string
	Message string
}

var (
	secretName = regexp.MustCompile(`(?i)(^|[_\-.#])(api_?key|apikey|secret|password|passwd|token)($|[_\-.#])`)
	hashName   = regexp.MustCompile(`(?i)hash|digest|fingerprint`)
	// Partition keys with a handful of values put all items of one value in
	// one partition (at most 1,000 WCU and 3,000 RCU per second).
	lowCardinality = map[string]bool{"status": true, "state": true}
)

// SchemaWarnings returns the design risks a schema shows by its names alone:
// a key attribute that looks like a secret stored in plain text (keys show
// up in stream records, exports, Contributor Insights and error messages;
// store a hash instead), and a GSI partitioned by a status-like attribute
// (a hot partition). NewTable adds each as a synth warning.
func SchemaWarnings(t schema.Table) []Warning {
	var out []Warning
	keys := []*schema.Attribute{&t.PartitionKey, t.SortKey}
	for i := range t.GlobalIndexes {
		keys = append(keys, &t.GlobalIndexes[i].PartitionKey, t.GlobalIndexes[i].SortKey)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if k == nil || seen[k.Name] {
			continue
		}
		seen[k.Name] = true
		if secretName.MatchString(k.Name) && !hashName.MatchString(k.Name) {
			out = append(out, Warning{
				ID:      "triggers:secret-in-key",
				Message: fmt.Sprintf("key attribute %q of table %q looks like a secret kept in plain text: key values appear in stream records, backups, exports and Contributor Insights; key the table by a hash of the secret (for example SHA-256) instead", k.Name, t.Name),
			})
		}
	}
	for _, ix := range t.GlobalIndexes {
		if lowCardinality[strings.ToLower(ix.PartitionKey.Name)] {
			out = append(out, Warning{
				ID:      "triggers:low-cardinality-index-key",
				Message: fmt.Sprintf("index %q of table %q is partitioned by %q: every item with the same value shares one partition (about 1,000 writes and 3,000 reads per second); fine for small tables, otherwise shard the key (for example status#N)", ix.Name, t.Name, ix.PartitionKey.Name),
			})
		}
	}
	return out
}
