# usbflash: build, test, lint, fuzz, bench, e2e.
#
# The USB backend needs libusb-1.0's headers (cgo). `deps` installs them when
# it can (root + apt-get); without them everything builds with -tags nousb,
# and usb: targets say how to get them. sim: and file: targets always work.

GO      ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN     := bin/usbflash
# Recursive on purpose: expanded after `deps` has run.
TAGS     = $(shell pkg-config --exists libusb-1.0 2>/dev/null || echo nousb)
FUZZTIME ?= 10s
DEMO_CARD ?= bin/demo-card.img

.PHONY: all deps build demo test lint fuzz bench e2e bench-e2e clean

all: build

deps:
	@if ! pkg-config --exists libusb-1.0 2>/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing libusb-1.0-0-dev and pkg-config (needed for usb: targets)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libusb-1.0-0-dev pkg-config >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libusb-1.0-0-dev pkg-config >/dev/null 2>&1; } || true; \
	  fi; \
	  pkg-config --exists libusb-1.0 2>/dev/null || \
	    echo "note: libusb-1.0-0-dev is not installed: building without USB support (sim: and file: targets work; for usb: run 'sudo apt-get install libusb-1.0-0-dev pkg-config' and rebuild)"; \
	fi

build: deps
	$(GO) build -tags "$(TAGS)" -o $(BIN) ./cmd/usbflash

# The main job on the embedded default: write the demo OS image to a
# simulated 64 MiB card, verify it by reading it back, and show the card.
demo: build
	rm -f $(DEMO_CARD)
	$(BIN) write testdata/demo.img.xz 'sim:$(DEMO_CARD)?size=64MiB&speed=40MB/s&latency=1ms' --yes
	$(BIN) info 'sim:$(DEMO_CARD)'

test: deps lint
	$(GO) test -tags "$(TAGS)" -count=1 ./...

lint: deps
	@out=$$(gofmt -l .); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags "$(TAGS)" ./...
	$(GO) vet -tags nousb ./...

# Short runs of every fuzz target (go test allows one target per run).
fuzz: deps
	@set -e; for pkg in $$($(GO) list -tags "$(TAGS)" ./...); do \
	  for f in $$($(GO) test -tags "$(TAGS)" -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -tags "$(TAGS)" -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

bench: deps
	$(GO) test -tags "$(TAGS)" -run '^$$' -bench . -benchtime 1x -count 1 ./...

e2e: build
	$(GO) test -tags "e2e $(TAGS)" -count=1 -timeout 40m -v ./e2e/

bench-e2e: build
	$(GO) test -tags "e2e $(TAGS)" -count=1 -timeout 40m -run BenchE2E -v ./e2e/

clean:
	rm -rf bin
