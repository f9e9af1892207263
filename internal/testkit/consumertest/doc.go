// Package consumertest holds the test that uses this module as another team
// would: it synthesizes the example CDK app examples/platform (a module of
// its own) against a read-only copy of this repository, the way a
// dependency sits in the module cache, with the Go functions really built.
// It has no code outside its tests.
package consumertest
