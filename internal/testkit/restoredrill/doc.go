// Package restoredrill tests scripts/restore-drill.sh, the restore drill of
// docs/runbook.md ("PITR restore"), against DynamoDB Local with the AWS
// CLI: the drill's copy mode (DynamoDB Local has neither PITR nor backups),
// its comparison of item counts and sampled items, a failing comparison
// when the restored table differs, and the context it prints to swap the
// table in. It holds tests only.
package restoredrill
