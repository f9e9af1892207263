// Package lambda holds the three Lambda functions of Triggers, one main
// package each: api (the HTTP API v1 behind API Gateway), authorizer (the
// REQUEST authorizer that maps an API key to its tenant) and
// streamconsumer (the events table's stream to the delivery queue), and
// fnconfig, which reads their configuration from the environment the
// constructs set.
//
// What each binary links is checked by this package's test: nothing under
// internal/dev (local development), internal/testkit (test support),
// internal/synth (the CDK app's side), the DynamoDB Local launcher and test
// harness (internal/ddb/ddblocal, internal/ddb/ddbtest), the constructs or
// aws-cdk-go. See docs/layout.md.
package lambda
