package avjson

// ParseFast exposes the fast path alone to the differential tests, so they
// can tell what it accepted from what it handed to the reference.
var ParseFast = parseFast

// ErrInvalidNumber is the error AppendValue wraps for a stored number that
// is not a JSON number.
var ErrInvalidNumber = errInvalidNumber
