// Package assertions holds the template tests of every stack and construct:
// targeted assertions on the synthesized CloudFormation, golden snapshots in
// testdata/ (rewritten with -update or UPDATE_GOLDEN=1), pinned logical ids
// of stateful resources, and cfn-lint over every template. One app is
// synthesized for the whole package (see TestMain).
package assertions
