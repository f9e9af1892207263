package httpapi

// RecoveryID is recoveryID, for the tests of package httpapi_test.
var RecoveryID = recoveryID

// SetAttemptsBudget sets the byte bound of an event's attempts answer
// (default event.MaxPageWireBytes) until the test ends.
func SetAttemptsBudget(t interface{ Cleanup(func()) }, n int) {
	old := attemptsBudget
	attemptsBudget = n
	t.Cleanup(func() { attemptsBudget = old })
}
