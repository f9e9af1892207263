package httpapi

// RecoveryID is recoveryID, for the tests of package httpapi_test.
var RecoveryID = recoveryID
