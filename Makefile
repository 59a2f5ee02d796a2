# swerve is always built static (CGO_ENABLED=0): the same binary runs inside
# every sandbox as its shim.
GO ?= go
export CGO_ENABLED ?= 0
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)

.PHONY: build test vet bench demo clean

build:
	$(GO) build -trimpath -ldflags "-X github.com/swerve-dev/swerve/internal/version.Version=$(VERSION)" -o bin/swerve ./cmd/swerve

vet:
	$(GO) vet ./...

# The whole test suite. Docker tests skip when no engine answers, unless
# SWERVE_DOCKER_TESTS=1 (as in CI) makes them mandatory.
test: vet
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 100x ./internal/...

demo: build
	./scripts/demo.sh

clean:
	rm -rf bin
