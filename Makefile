# swerve is always built static (CGO_ENABLED=0): the same binary runs inside
# every sandbox as its shim.
GO ?= go
export CGO_ENABLED ?= 0

.PHONY: build test vet bench demo clean

build:
	$(GO) build -trimpath -o bin/swerve ./cmd/swerve

vet:
	$(GO) vet ./...

# The whole test suite. Docker tests skip when no engine answers, unless
# SWERVE_DOCKER_TESTS=1 (as in CI) makes them mandatory.
test: vet
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 200x ./internal/sandbox/...

demo: build
	./scripts/demo.sh

clean:
	rm -rf bin
