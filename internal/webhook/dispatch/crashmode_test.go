//go:build !mutation

package dispatch_test

// crashCases: TestCrashPoints runs every fault case. Mutation runs build
// with the tag mutation (scripts/mutate.sh) and run only the scenarios'
// clean runs, single and with doubled messages, so that one mutant's test
// run stays short; their invariants still hold every mutant to account.
const crashCases = true
