# The test command of the README. Fuzz tests run their seed corpus here; `make fuzz` explores.
.PHONY: test test-short test-fault run lint bench fuzz soak throughput vulncheck

# gotestsum (a tool of go.mod) runs go test and ends with a summary: every skipped test with
# the reason it gave (no TEST_DATABASE_URL, no Postgres binaries, ...), every failure, and the
# counts.
GOTESTSUM = go tool gotestsum --format standard-quiet --format-icons text --

# The fault tests run after the rest, on their own: they bound every request's latency to the
# store's deadline + 500 ms, which the other packages' CPU-bound property tests, run beside
# them on two cores, could stretch. They run even when the rest failed; make fails if either did.
test:
	@$(GOTESTSUM) -race -count=1 -skip '^TestFault' ./...; rest=$$?; \
	$(GOTESTSUM) -race -count=1 -run '^TestFault' ./db/... ./cmd/api; fault=$$?; \
	exit $$(( rest | fault ))

# The quick loop while editing: no race detector, the long property runs cut short.
test-short:
	@$(GOTESTSUM) -short -count=1 ./...

# The fault suite alone: the store and the whole program on a private Postgres (package
# db/pgfault) that is frozen, stopped and restarted under load. It is part of `make test` too.
test-fault:
	go test -race -count=1 -run '^TestFault' -v ./db/... ./cmd/api

run:
	go run ./cmd/api

# The soak (tools/soak; docs/performance.md, "Soak"): the real binary as game backends drive it,
# SOAK_REPLICAS replicas on one Postgres, SOAK_RATE arrivals/s (20% parties) for
# SOAK_DURATION, every ticket waiting by SOAK_WAIT (longpoll or sse), a result per match;
# then a summary. The database: DATABASE_URL as it is, or a fresh one made on
# TEST_DATABASE_URL's server and dropped at the end. More flags: SOAK_FLAGS (go run
# ./tools/soak -h), e.g. SOAK_FLAGS='-backends 8 -json'.
SOAK_REPLICAS ?= 2
SOAK_RATE ?= 300
SOAK_DURATION ?= 10m
SOAK_WAIT ?= longpoll
SOAK_FLAGS ?=
soak:
	go run ./tools/soak -replicas $(SOAK_REPLICAS) -rate $(SOAK_RATE) -duration $(SOAK_DURATION) -wait $(SOAK_WAIT) $(SOAK_FLAGS)

# The throughput table (scripts/throughput.sh; docs/performance.md, "The throughput table"):
# 1 and 2 replicas at rising arrival rates, one API key with the default limits.
throughput:
	scripts/throughput.sh

# govulncheck against a pinned snapshot of the Go vulnerability database (scripts/vulncheck.sh
# says how it is built and how to use the live one).
vulncheck:
	./scripts/vulncheck.sh

lint:
	gofmt -l $$(git ls-files '*.go')
	go vet ./...
	npx --yes @redocly/cli@2.77.0 lint --config redocly.yaml api/openapi.yaml

bench:
	go test -run '^$$' -bench . -benchmem ./...

# Every fuzz test in the module, FUZZTIME each; copy what it finds from
# $$(go env GOCACHE)/fuzz into the package's testdata/fuzz to keep it in the seed corpus.
FUZZTIME ?= 2m
fuzz:
	for pkg in $$(go list ./...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    go test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	  done; \
	done
