// Package jsiienv silences the Node support banner that the jsii runtime
// (behind aws-cdk-go) prints on every run. Import it for its side effect in
// every program and test package that uses aws-cdk-go:
//
//	import _ "github.com/triggers-dev/triggers/internal/synth/jsiienv"
//
// The banner is printed by the Node process unless
// JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION (deprecated versions) or
// JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION (a comma-separated list of
// end-of-life major versions) is set. jsii-runtime-go captures the
// environment for that process when the first jsii package initializes,
// before main or TestMain runs, so setting the variables there is too late.
// This package imports no package that imports os (syscall, strings,
// strconv, hash/fnv; TestImportsNoOS checks): by the Go initialization
// order (packages initialize in import-path order once their imports are
// done), it is initialized before package os, and so before any jsii
// package.
// Variables the caller set are left alone.
//
// It also starts the jsii kernel without the relay process in front of it
// (direct mode, in direct.go): every jsii request then crosses one process
// boundary instead of two. TRIGGERS_JSII_RELAY=1 turns that off. In direct
// mode, a CDK app run for synthesis also starts CDK's template validation
// engine in a worker thread while it builds its constructs (the validation
// worker, in validation.go); TRIGGERS_JSII_VALIDATION_WORKER=0 turns that
// off.
package jsiienv

import "syscall"

// EndOfLifeNodeMajors are the Node major versions whose end-of-life banner is
// silenced: Node 20 is the version on this project's machines and reached
// the end of jsii support on 2026-10-30.
const EndOfLifeNodeMajors = "20"

func init() {
	setDefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
	setDefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", EndOfLifeNodeMajors)
	setUpDirect()
}

func setDefault(key, value string) {
	if _, ok := syscall.Getenv(key); !ok {
		_ = syscall.Setenv(key, value)
	}
}
