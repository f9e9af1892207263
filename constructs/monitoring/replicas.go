package monitoring

import "github.com/triggers-dev/triggers/constructs/dynamotable"

// replicaRegionsOf returns the replica regions to monitor: the given ones,
// else those of a global table built by dynamotable (TableOptions.Replicas).
func replicaRegionsOf(table dynamotable.ITable, given []string) []string {
	if len(given) > 0 {
		return given
	}
	if g, ok := table.(interface{ ReplicaRegions() []string }); ok {
		return g.ReplicaRegions()
	}
	return nil
}
