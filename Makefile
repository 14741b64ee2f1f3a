.PHONY: build test test-short bench fuzz install

build:
	CGO_ENABLED=0 go build -o bin/bench ./cmd/bench

install:
	go install ./cmd/bench

# The full test suite with real servers (sshd, moto, PostgreSQL, ...).
test:
	./scripts/test.sh

# Unit tests only; integration tests without their server skip.
test-short:
	go test ./...

bench:
	go test -run XXX -bench . ./...
