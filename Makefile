# usbflash: build, test, lint, fuzz, bench, e2e.
#
# The USB backend needs libusb-1.0's headers (cgo). `deps` installs them
# when run as root and fails, saying what to install, when it cannot: a
# green build means the USB backend was compiled. NOUSB=1 asks for the
# build without it (-tags nousb: sim: and file: targets only).

GO      ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN     := bin/usbflash
NOUSB   ?=
TAGS    := $(if $(filter 1,$(NOUSB)),nousb)
FUZZTIME ?= 10s
DEMO_CARD ?= bin/demo-card.img
# The version and revision usbflash reports, stamped here because the Go
# toolchain's own VCS stamping is off wherever GOFLAGS has -buildvcs=false.
VERSION  := $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
REVTIME  := $(shell git log -1 --format=%cI 2>/dev/null)
MODIFIED := $(shell git diff --quiet HEAD 2>/dev/null && echo false || echo true)
LDFLAGS  := -X main.stampedVersion=$(VERSION) -X main.stampedRevision=$(REVISION) \
	-X main.stampedTime=$(REVTIME) -X main.stampedModified=$(MODIFIED)
STATICCHECK := $(GO) tool staticcheck

.PHONY: all deps test-deps build build-static demo test lint fuzz bench e2e e2e-static bench-e2e clean \
	cross-deps cross cross-linux cross-nousb test-arm64 test-arm e2e-arm64 bench-e2e-arm64

all: build

deps:
ifneq ($(NOUSB),1)
	@.ci/apt-install --or "build without USB: make NOUSB=1 $(or $(MAKECMDGOALS),build)" \
	  "the USB backend (usb: targets)" libusb-1.0-0-dev pkg-config
endif

# What the tests compare with: bmaptool, since our block maps must work
# with it (and its with ours). Installed like libusb's headers.
test-deps:
	@.ci/apt-install "the block-map tests (they prove usbflash's maps work with bmaptool)" bmap-tools

build: deps
	$(GO) build -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/usbflash

# One static binary with USB and no libusb: the pure-Go usbfs backend
# (Linux only), no cgo. Runs on any Linux of its architecture.
# One static Linux binary with USB and no libusb: the pure-Go usbfs
# backend (usbms/usbfs). Proven in QEMU by `make e2e-static`.
build-static:
	CGO_ENABLED=0 $(GO) build -tags usbfs -ldflags "$(LDFLAGS)" -o bin/usbflash-static ./cmd/usbflash

# The main job on the embedded default: write the demo OS image to a
# simulated 64 MiB card, verify it by reading it back, and show the card.
demo: build
	rm -f $(DEMO_CARD)
	$(BIN) write testdata/demo.img.xz 'sim:$(DEMO_CARD)?size=64MiB&speed=40MB/s&latency=1ms' --yes
	$(BIN) info 'sim:$(DEMO_CARD)'

test: deps test-deps lint
	$(GO) test -tags "$(TAGS)" -count=1 ./...

# lint vets with and without the USB backend, and without cgo, for another
# OS and for a 32-bit architecture, as make cross and make test-arm build.
lint: deps
	@out=$$(gofmt -l .); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags "$(TAGS)" ./...
	$(GO) vet -tags nousb ./...
	CGO_ENABLED=0 $(GO) vet -tags nousb ./...
	GOOS=windows CGO_ENABLED=0 $(GO) vet -tags nousb ./...
	GOARCH=arm CGO_ENABLED=0 $(GO) vet -tags nousb ./...
	$(STATICCHECK) -tags "e2e $(TAGS)" ./...
	$(STATICCHECK) -tags nousb ./...
	CGO_ENABLED=0 $(GO) vet -tags usbfs ./...
	CGO_ENABLED=0 $(STATICCHECK) -tags usbfs ./...

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

# The static usbfs binary over the real USB path: every format written and
# verified on xHCI and EHCI.
e2e-static: build-static
	USBFLASH_E2E_BIN=$(CURDIR)/bin/usbflash-static \
	  $(GO) test -tags "e2e $(TAGS)" -count=1 -timeout 20m -run 'TestWriteFormats$$' -v ./e2e/

bench-e2e: build
	$(GO) test -tags "e2e $(TAGS)" -count=1 -timeout 40m -run BenchE2E -v ./e2e/

# Issue 21's slow-host table: 96 and 384 MiB against dd in one boot per
# controller (fixed cost and steady rate apart), verify, process start.
# BEFORE=path/to/an/earlier/usbflash adds its rows to the same boots.
bench-slowhost: build
	USBFLASH_E2E_BIN_BEFORE=$(BEFORE) \
	  $(GO) test -tags "e2e $(TAGS)" -count=1 -timeout 60m -run 'TestSlowHostBench$$' -v ./e2e/

# Other platforms. Linux on arm64 and armhf with the libusb backend (cgo:
# Debian's cross compilers, the target's multiarch libusb-1.0-0-dev, linked
# dynamically: the target needs libusb-1.0-0), and the no-USB build (sim:
# and file: targets only) for the rest, so portability cannot rot.
# `cross-deps` installs the compilers and libraries (root, apt-get).
CROSS_LINUX := arm64:aarch64-linux-gnu:arm64 armhf:arm-linux-gnueabihf:arm
CROSS_NOUSB := darwin/arm64 darwin/amd64 windows/amd64 freebsd/amd64

cross-deps:
	.ci/cross-deps

cross: cross-linux cross-nousb

# bin/usbflash-linux-<Debian arch>; armhf is GOARM=7 (hard float).
cross-linux: cross-deps
	@set -e; for t in $(CROSS_LINUX); do \
	  deb=$${t%%:*}; rest=$${t#*:}; triplet=$${rest%%:*}; goarch=$${rest#*:}; \
	  echo "== linux/$$deb (libusb, cgo)"; \
	  CGO_ENABLED=1 GOOS=linux GOARCH=$$goarch GOARM=7 CC=$$triplet-gcc \
	    PKG_CONFIG_LIBDIR=/usr/lib/$$triplet/pkgconfig:/usr/share/pkgconfig \
	    $(GO) build -ldflags "$(LDFLAGS)" -o bin/usbflash-linux-$$deb ./cmd/usbflash; \
	done

cross-nousb:
	@set -e; for t in $(CROSS_NOUSB); do \
	  os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "== $$t (nousb)"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -tags nousb -ldflags "$(LDFLAGS)" -o bin/usbflash-$$os-$$arch$$ext ./cmd/usbflash; \
	done

# The unit tests as arm64 (test-arm64) and 32-bit arm (test-arm: 32-bit
# int, 4-byte alignment) programs under qemu-user emulation. No cgo: the
# libusb backend is exercised by e2e-arm64. Every package but the CLI's and
# the QEMU suite's (nothing to emulate there), whatever the tree holds.
EMU_TEST_PKGS = $(shell $(GO) list ./... | grep -v -e /e2e -e /cmd/)
test-arm64: cross-deps
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) test -tags nousb -count=1 -exec qemu-aarch64-static $(EMU_TEST_PKGS)

test-arm: cross-deps
	CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 $(GO) test -tags nousb -count=1 -exec qemu-arm-static $(EMU_TEST_PKGS)

# The arm64 build in an arm64 guest (see e2e/README.md).
e2e-arm64: cross-linux
	USBFLASH_E2E_BIN_ARM64=$(CURDIR)/bin/usbflash-linux-arm64 \
	  $(GO) test -tags "e2e $(TAGS)" -count=1 -timeout 30m -run 'TestArm64$$' -v ./e2e/

bench-e2e-arm64: cross-linux
	USBFLASH_E2E_BIN_ARM64=$(CURDIR)/bin/usbflash-linux-arm64 \
	  $(GO) test -tags "e2e $(TAGS)" -count=1 -timeout 40m -run 'TestArm64Bench$$' -v ./e2e/

clean:
	rm -rf bin
