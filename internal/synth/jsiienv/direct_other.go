//go:build !unix

package jsiienv

// setUpDirect does nothing here: direct mode's script is a shell script.
func setUpDirect() {}
