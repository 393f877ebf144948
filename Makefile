# The test command of the README. Fuzz tests run their seed corpus here; `make fuzz` explores.
.PHONY: test run lint bench fuzz

test:
	go test -race -count=1 ./...

run:
	go run ./cmd/api

lint:
	gofmt -l $$(git ls-files '*.go')
	go vet ./...
	npx --yes @redocly/cli@2.77.0 lint --config redocly.yaml api/openapi.yaml

bench:
	go test -run '^$$' -bench . -benchmem ./...

FUZZTIME ?= 2m
fuzz:
	go test ./internal/handlers/ -run '^$$' -fuzz FuzzMatchmake -fuzztime $(FUZZTIME)
