//go:build mutation

package dispatch_test

// crashCases: see crashmode_test.go.
const crashCases = false
