package ddbtest

// NoStreamsOf returns l as MainWith returns it with Options.NoStreams.
func NoStreamsOf(l *Local) *Local {
	c := *l
	c.noStreams = true
	return &c
}
