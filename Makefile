.PHONY: build test test-short test-ui bench fuzz install

build:
	CGO_ENABLED=0 go build -o bin/bench ./cmd/bench

install:
	CGO_ENABLED=0 go install ./cmd/bench

# The full test suite with real servers (sshd, moto, PostgreSQL, ...).
test:
	./scripts/test.sh

# The browser tests alone (bench report's page, bench ui's dashboard) in
# headless Chromium, which scripts/testenv/chromium.sh installs if missing.
test-ui:
	eval "$$(./scripts/testenv/chromium.sh up /tmp)" && BENCH_TEST_STRICT=1 go test -count=1 -run 'TestReportInChromium|TestDashboardInChromium' ./cmd/bench/

# Unit tests only; integration tests without their server skip.
test-short:
	go test ./...

bench:
	go test -run XXX -bench . ./...
