# usbflash: build, test, lint, fuzz, bench, e2e.
#
# On Linux the USB backend is usbms/usbfs, pure Go: `make build` is one
# static CGO_ENABLED=0 binary that needs nothing on the target. LIBUSB=1
# builds the gousb/libusb backend instead (-tags libusb, cgo: libusb-1.0's
# headers), the backend of macOS, Windows and the BSDs, where it is the
# default. NOUSB=1 builds without USB (-tags nousb: sim: and file: targets
# only). `libusb-deps` installs libusb's headers when run as root and fails,
# saying what to install, when it cannot: the libusb build, its unit tests
# (make test runs them) and `make e2e-libusb` need them.

GO      ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
GOOS    := $(shell $(GO) env GOOS)
BIN     := bin/usbflash
NOUSB   ?=
LIBUSB  ?=
TAGS    := $(if $(filter 1,$(NOUSB)),nousb,$(if $(filter 1,$(LIBUSB)),libusb))
# cgo only for the libusb backend: off for Linux's usbfs and for nousb.
CGO     := $(if $(filter 1,$(NOUSB)),0,$(if $(filter 1,$(LIBUSB)),1,$(if $(filter linux,$(GOOS)),0,1)))
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

.PHONY: all deps libusb-deps test-deps build build-libusb build-libusb-dl demo demo-image test lint fuzz bench bench-customize bench-url e2e e2e-libusb e2e-libusb-dl bench-e2e profile-slowhost clean \
	cross-deps cross cross-linux cross-usbdl cross-nousb test-arm64 test-arm test-riscv64 test-386 e2e-arm64 bench-e2e-arm64 bench-slowhost \
	bench-slowhost-arm64 bench-slowhost-ab dist dist-repro dist-check test-windows browser-deps test-browser screenshots

all: build

# What the build needs: libusb's headers when it is the libusb one.
deps: $(if $(filter 1,$(CGO)),libusb-deps)

# libusb's headers, for the libusb backend (cgo): its build, its unit tests
# and lint, e2e-libusb. Not needed with NOUSB=1.
libusb-deps:
ifneq ($(NOUSB),1)
	@.ci/apt-install --or "build without USB: make NOUSB=1 $(or $(MAKECMDGOALS),build)" \
	  "the libusb USB backend (-tags libusb)" libusb-1.0-0-dev pkg-config
endif

# What the tests compare with: bmaptool, since our block maps must work
# with it (and its with ours). Installed like libusb's headers.
test-deps:
	@.ci/apt-install "the block-map tests (they prove usbflash's maps work with bmaptool)" bmap-tools

# On Linux (usbfs, or NOUSB=1) a static binary: runs on any Linux of its
# architecture with nothing else installed.
build: deps
	CGO_ENABLED=$(CGO) $(GO) build -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/usbflash

# The libusb backend on Linux (cgo, linked to libusb-1.0): what e2e-libusb
# runs, so the backend of macOS, Windows and the BSDs cannot rot.
build-libusb: libusb-deps
	CGO_ENABLED=1 $(GO) build -tags libusb -ldflags "$(LDFLAGS)" -o bin/usbflash-libusb ./cmd/usbflash

# The backend macOS and Windows builds carry (usbms/libusbdl: libusb-1.0
# loaded at run time, no cgo) built for Linux: what e2e-libusb-dl runs.
# Not static: the loader it calls through needs the C library's.
build-libusb-dl:
	CGO_ENABLED=0 $(GO) build -tags libusbdl -ldflags "$(LDFLAGS)" -o bin/usbflash-libusb-dl ./cmd/usbflash

# The main job on the embedded default: write the demo OS image to a
# simulated 64 MiB card, verify it by reading it back, and show the card.
demo: build
	rm -f $(DEMO_CARD)
	$(BIN) write testdata/demo.img.xz 'sim:$(DEMO_CARD)?size=64MiB&speed=40MB/s&latency=1ms' --yes
	$(BIN) info 'sim:$(DEMO_CARD)'

# The demo image from its generator (testdata/gendemo: go-diskfs for its
# FAT32, e2fsprogs for its ext4), compressed as committed: xz -T2 in 8 MiB
# blocks, so that it exercises the parallel decoder.
demo-image:
	$(GO) run ./testdata/gendemo > bin/demo.img
	xz -T2 --block-size=8MiB -6 -c bin/demo.img > testdata/demo.img.xz
	rm -f bin/demo.img

# Every package with the build's tags; then, unless NOUSB=1, the libusb
# backend's own tests, the backend choice's (usbms/backend) and drive's,
# which reaches it (-tags libusb; lint vets every package with it,
# e2e-libusb runs the CLI built with it).
LIBUSB_TEST_PKGS := ./usbms/libusb/ ./usbms/backend/ ./internal/drive/
test: deps libusb-deps test-deps lint
	CGO_ENABLED=$(CGO) $(GO) test -tags "$(TAGS)" -count=1 ./...
ifneq ($(NOUSB),1)
ifneq ($(LIBUSB),1)
	CGO_ENABLED=1 $(GO) test -tags libusb -count=1 $(LIBUSB_TEST_PKGS)
	CGO_ENABLED=0 $(GO) test -tags libusbdl -count=1 ./usbms/backend/ ./internal/drive/
endif
endif

# lint vets both USB backends (usbfs: Linux's default, static; libusb:
# -tags libusb, cgo) and the build without USB, for another OS and for a
# 32-bit architecture, as make cross and make test-arm build.
lint: deps libusb-deps
	@out=$$(gofmt -l .); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	CGO_ENABLED=0 $(GO) vet -tags e2e ./...
	$(GO) vet -tags nousb ./...
	GOOS=windows CGO_ENABLED=0 $(GO) vet -tags nousb ./...
	GOOS=windows CGO_ENABLED=0 $(GO) vet ./...
	GOOS=darwin CGO_ENABLED=0 $(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet -tags "e2e libusbdl" ./...
	GOARCH=arm CGO_ENABLED=0 $(GO) vet ./...
	CGO_ENABLED=0 $(STATICCHECK) -tags e2e ./...
	$(STATICCHECK) -tags nousb ./...
ifneq ($(NOUSB),1)
	CGO_ENABLED=1 $(GO) vet -tags "e2e libusb" ./...
	CGO_ENABLED=1 $(STATICCHECK) -tags "e2e libusb" ./...
endif

# The page (usbflash serve) driven in a real Chromium, headless, against
# simulated readers (internal/ui/web/browsertest): make test runs them too,
# and they skip without a Chromium unless CI is set or
# USBFLASH_BROWSER_REQUIRE=1; here they must run. Debian's chromium is
# installed like libusb's headers.
browser-deps:
	@.ci/apt-install "the page's browser tests (make test-browser, make screenshots)" chromium

test-browser: build browser-deps
	USBFLASH_BIN=$(CURDIR)/$(BIN) USBFLASH_BROWSER_REQUIRE=1 \
	  $(GO) test -count=1 -timeout 15m ./internal/ui/web/browsertest/

# The page's screenshots in docs/screenshots (one card, a station of four
# slots, a failure), made by the browser tests that reach those states, so
# they show what the page shows.
screenshots: build browser-deps
	USBFLASH_BIN=$(CURDIR)/$(BIN) USBFLASH_BROWSER_REQUIRE=1 USBFLASH_SCREENSHOTS=$(CURDIR)/docs/screenshots \
	  $(GO) test -count=1 -timeout 15m -run 'TestWriteFromURL$$|TestStation$$|TestUnplugMidWrite$$' ./internal/ui/web/browsertest/

# Short runs of every fuzz target (go test allows one target per run).
fuzz: deps
	@set -e; for pkg in $$($(GO) list -tags "$(TAGS)" ./...); do \
	  for f in $$($(GO) test -tags "$(TAGS)" -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -tags "$(TAGS)" -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

bench: deps
	$(GO) test -tags "$(TAGS)" -run '^$$' -bench . -benchtime 1x -count 1 ./...

# A customised write against a plain one of the same 1 GiB OS-like image
# (.xz), interleaved rounds in one run (flash's BenchmarkCustomizedWrite):
# the median custom/plain ratio of wall time (goal < 1.05) and of CPU
# seconds, and each side's. ROUNDS=5 by default.
bench-customize:
	USBFLASH_BENCH_MB=1024 USBFLASH_BENCH_ROUNDS=$(or $(ROUNDS),5) \
	  $(GO) test -run '^$$' -bench 'BenchmarkCustomizedWrite$$' -benchtime 1x -count 1 -v ./internal/session/

# Issue 33's goal: a write from a URL (e2e/httpserve on the loopback)
# against the same image from a file, side by side in one run on sim
# cards: medians of wall, MB/s, CPU s/GiB, the URL/file ratio (goal >=
# 0.95x) and the download alone (e2e/urlbench). BEFORE=path/to/usbflash
# adds its URL/file column; URLBENCH_MIB=96,384, URLBENCH_FORMATS=
# raw,gz,zst,xz, URLBENCH_SPEEDS=,40MB/s (empty: memory speed),
# ROUNDS=3, URLBENCH_DIR= keeps the compressed images between runs.
URLBENCH_MIB ?= 96,384
URLBENCH_FORMATS ?= raw,gz,zst,xz
URLBENCH_SPEEDS ?= ,40MB/s
bench-url: build
	$(GO) build -tags e2e -o bin/httpserve ./e2e/httpserve
	$(GO) run -tags e2e ./e2e/urlbench -bin $(BIN) -serve bin/httpserve $(if $(BEFORE),-before $(BEFORE)) \
	  -mib '$(URLBENCH_MIB)' -formats '$(URLBENCH_FORMATS)' -speeds '$(URLBENCH_SPEEDS)' -rounds $(or $(ROUNDS),3) \
	  $(if $(URLBENCH_DIR),-dir $(URLBENCH_DIR))

# The whole QEMU suite with bin/usbflash (on Linux: usbfs, static).
e2e: build
	USBFLASH_E2E_BIN=$(CURDIR)/$(BIN) \
	  $(GO) test -tags e2e -count=1 -timeout 40m -v ./e2e/

# The libusb build over the real USB path, so it cannot rot: every format
# written and verified on xHCI and EHCI, and ClearHalt recovering stalled
# endpoints (the probe is built with -tags libusb too).
E2E_LIBUSB_RUN := TestWriteFormats$$|TestClearHaltRecovers$$
e2e-libusb: build-libusb
	USBFLASH_E2E_BIN=$(CURDIR)/bin/usbflash-libusb \
	  $(GO) test -tags e2e -count=1 -timeout 20m -run '$(E2E_LIBUSB_RUN)' -v ./e2e/

# The same subset with the backend macOS and Windows run (libusb loaded at
# run time; the harness ships libusb-1.0.so.0 into the guest), and UAS
# through its bulk streams: the code those systems run, on real USB here.
E2E_LIBUSB_DL_RUN := $(E2E_LIBUSB_RUN)|TestUAS$$
# TestUAS's speed rounds only log rates: one round here, where what is
# proven is that the backend streams, byte for byte (its size stays: the
# unplug at its end writes 80 MiB to a card of that size and 8 MiB more).
e2e-libusb-dl: build-libusb-dl
	USBFLASH_E2E_BIN=$(CURDIR)/bin/usbflash-libusb-dl USBFLASH_UAS_ROUNDS=$(or $(USBFLASH_UAS_ROUNDS),1) \
	  $(GO) test -tags e2e -count=1 -timeout 30m -run '$(E2E_LIBUSB_DL_RUN)' -v ./e2e/

bench-e2e: build
	USBFLASH_E2E_BIN=$(CURDIR)/$(BIN) \
	  $(GO) test -tags e2e -count=1 -timeout 40m -run BenchE2E -v ./e2e/

# Issue 21's slow-host table: 96 and 384 MiB against dd in one boot per
# controller (fixed cost and steady rate apart), verify, process start.
# BEFORE=path/to/an/earlier/usbflash adds its rows to the same boots.
bench-slowhost: build
	USBFLASH_E2E_BIN=$(CURDIR)/$(BIN) USBFLASH_E2E_BIN_BEFORE=$(BEFORE) \
	  $(GO) test -tags e2e -count=1 -timeout 60m -run 'TestSlowHostBench$$' -v ./e2e/

# Builds against each other in one slow-host boot, write by write, with
# where each write's time went (e2e/slowhost_ab_test.go):
# AB="before=path/to/usbflash after=bin/usbflash" (default: this tree's),
# AB_ARCH=arm64 (then the paths are arm64 builds), AB_CONTROLLER=ehci,
# AB_MIB=96,384, AB_FLAGS=--no-verify (--no-verify=false verifies), ROUNDS=6.
AB_ARCH ?= amd64
bench-slowhost-ab: build $(if $(filter arm64,$(AB_ARCH)),cross-deps cross-linux)
	USBFLASH_E2E_BIN=$(CURDIR)/$(BIN) USBFLASH_E2E_BIN_ARM64=$(CURDIR)/bin/usbflash-linux-arm64 \
	USBFLASH_E2E_AB="$(AB)" USBFLASH_E2E_AB_ARCH=$(AB_ARCH) USBFLASH_E2E_AB_CONTROLLER=$(AB_CONTROLLER) \
	USBFLASH_E2E_AB_MIB=$(AB_MIB) USBFLASH_E2E_AB_FLAGS="$(AB_FLAGS)" USBFLASH_E2E_BENCH_ROUNDS=$(ROUNDS) \
	  $(GO) test -tags e2e -count=1 -timeout 60m -run 'TestSlowHostAB$$' -v ./e2e/

# Where the slow host's CPU goes: a -tags profile build's CPU profiles and
# --json events in the same guest, into PROFILE_DIR (go tool pprof them
# against a `go build -tags profile` binary of the same tree).
# PROFILE_ARCH=arm64 in the arm64 guest; PROFILE_RUNS=write,write-verify
# some of the runs; CONTROLLERS=xhci one controller.
PROFILE_DIR ?= $(CURDIR)/bin/profiles
profile-slowhost:
	mkdir -p $(PROFILE_DIR)
	USBFLASH_E2E_PROFILE_DIR=$(PROFILE_DIR) USBFLASH_E2E_PROFILE_ARCH=$(PROFILE_ARCH) \
	USBFLASH_E2E_PROFILE_RUNS=$(PROFILE_RUNS) USBFLASH_E2E_BENCH_CONTROLLERS=$(CONTROLLERS) \
	  $(GO) test -tags e2e -count=1 -timeout 30m -run 'TestSlowHostProfile$$' -v ./e2e/

# Other platforms. Linux on every architecture with the usbfs backend:
# static CGO_ENABLED=0 binaries, no C cross compiler, nothing needed on the
# target. macOS and Windows (amd64 and arm64) with their USB backend,
# libusb loaded at run time (usbms/libusbdl): CGO_ENABLED=0 too, and they
# need libusb where they run; they write disk: targets, pure Go
# (pipeline/diskdev), besides usb:, file: and sim:, and each is vetted as
# it is built (cross-usbdl). FreeBSD with the no-USB build (file: and sim:
# only), so portability cannot rot: its USB backend, libusb through cgo,
# needs its own C toolchain. `cross-deps` installs QEMU for the arm tests
# (root, apt-get).
CROSS_LINUX := amd64:amd64 arm64:arm64 armhf:arm i386:386 riscv64:riscv64
CROSS_USBDL := darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
CROSS_NOUSB := freebsd/amd64

cross-deps:
	.ci/cross-deps

cross: cross-linux cross-usbdl cross-nousb

# bin/usbflash-linux-<Debian arch>; armhf is GOARM=7 (hard float).
cross-linux:
	@set -e; for t in $(CROSS_LINUX); do \
	  deb=$${t%%:*}; goarch=$${t#*:}; \
	  echo "== linux/$$deb (usbfs, static)"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$goarch GOARM=7 \
	    $(GO) build -ldflags "$(LDFLAGS)" -o bin/usbflash-linux-$$deb ./cmd/usbflash; \
	done

# bin/usbflash-<os>-<arch>[.exe], vetted as they are built.
cross-usbdl:
	@set -e; for t in $(CROSS_USBDL); do \
	  os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "== $$t (libusb loaded at run time)"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -ldflags "$(LDFLAGS)" -o bin/usbflash-$$os-$$arch$$ext ./cmd/usbflash; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) vet ./...; \
	done

cross-nousb:
	@set -e; for t in $(CROSS_NOUSB); do \
	  os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "== $$t (nousb)"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -tags nousb -ldflags "$(LDFLAGS)" -o bin/usbflash-$$os-$$arch$$ext ./cmd/usbflash; \
	  case $$os in darwin|windows) CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) vet -tags nousb ./... ;; esac; \
	done

# The Windows build's tests under Wine (Debian's wine; .ci/wine-prefix
# makes the prefix, with the ProcessPrng stand-in Go's runtime needs
# there), as windows/amd64 test binaries go test runs through
# .ci/wine-exec: the packages with Windows code of their own, and drive's
# disk: decisions and Windows opens (drive's other tests make sim: cards
# in t.TempDir, which Wine 8 cannot remove: testkit/scratch). What Wine
# does not implement (disk device interfaces, volume extents and locks) is
# skipped by name, with the reason. Then the Windows binary itself: the
# demo image to a sim: card, read back, and list.
WINEPREFIX_DIR ?= $(CURDIR)/bin/wine-prefix
WINE_ENV = WINEPREFIX=$(WINEPREFIX_DIR) WINEDEBUG=-all
WINE_TEST = $(WINE_ENV) GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) test -tags nousb -count=1 -exec $(CURDIR)/.ci/wine-exec
WINE_TEST_PKGS := ./pipeline/diskdev/ ./internal/lib/windisk/ ./internal/testkit/scratch/
WINE_DRIVE_TESTS := ^(TestJudgeDisk|TestListed|TestDiskFrom.*|TestParseTarget.*|TestPathTarget|TestListDisksWindows|TestOpenDiskWindows)$$
test-windows:
	.ci/wine-prefix $(WINEPREFIX_DIR)
	$(WINE_TEST) -v $(WINE_TEST_PKGS)
	$(WINE_TEST) -v -run '$(WINE_DRIVE_TESTS)' ./internal/drive/
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) build -tags nousb -ldflags "$(LDFLAGS)" -o bin/usbflash-wine.exe ./cmd/usbflash
	rm -f bin/wine-demo-card.img
	$(WINE_ENV) wine bin/usbflash-wine.exe write --yes testdata/demo.img.xz 'sim:bin/wine-demo-card.img?size=64MiB'
	$(WINE_ENV) wine bin/usbflash-wine.exe list

# The unit tests as arm64 (test-arm64), 32-bit arm (test-arm: 32-bit int,
# 4-byte alignment) and riscv64 (test-riscv64) programs under qemu-user
# emulation, with the usbfs backend's (pure Go, as make cross builds them):
# every binary that is shipped is tested on its own architecture before
# make dist packs it (.ci/run runs them first). Every package but the
# CLI's and the QEMU suite's (nothing to emulate there) and usbms/libusbdl
# (its tests load the machine's own libusb, and no shipped Linux binary
# carries it), whatever the tree holds; go test builds and runs them two at a time (-p, the cores), most
# test binaries running on one core. With -short, nothing is skipped:
# every test runs and asserts what it asserts natively; the truncation
# tests of imagesrc (TestSourceTruncated, TestSourceTruncatedMulti) cut
# each archive at a tenth of the points between their first and last 80
# cuts, which they always make. make test-riscv64 took 311 s on a 2-core
# machine at load 5-7 (docs/development.md).
EMU_TEST_PKGS = $(shell $(GO) list ./... | grep -v -e /e2e -e /cmd/ -e /usbms/libusbdl -e /browsertest)
EMU_TEST = CGO_ENABLED=0 GOOS=linux $(GO) test -short -count=1 -timeout 30m
test-arm64: cross-deps
	USBFLASH_TEST_EXEC=qemu-aarch64-static GOARCH=arm64 $(EMU_TEST) -exec qemu-aarch64-static $(EMU_TEST_PKGS)

test-arm: cross-deps
	USBFLASH_TEST_EXEC=qemu-arm-static GOARCH=arm GOARM=7 $(EMU_TEST) -exec qemu-arm-static $(EMU_TEST_PKGS)

test-riscv64: cross-deps
	USBFLASH_TEST_EXEC=qemu-riscv64-static GOARCH=riscv64 $(EMU_TEST) -exec qemu-riscv64-static $(EMU_TEST_PKGS)

# i386 needs no emulator: an amd64 kernel runs i386 programs (Debian's
# qemu-i386 user emulator crashes any Go program). TestI386 (make e2e)
# runs the i386 binary's USB path in the amd64 guest.
test-386:
	CGO_ENABLED=0 GOOS=linux GOARCH=386 $(GO) test -count=1 -timeout 30m $(EMU_TEST_PKGS)

# The static arm64 build in an arm64 guest with no libusb (see e2e/README.md).
e2e-arm64: cross-deps cross-linux
	USBFLASH_E2E_BIN_ARM64=$(CURDIR)/bin/usbflash-linux-arm64 \
	  $(GO) test -tags e2e -count=1 -timeout 30m -run 'TestArm64$$' -v ./e2e/

bench-e2e-arm64: cross-deps cross-linux
	USBFLASH_E2E_BIN_ARM64=$(CURDIR)/bin/usbflash-linux-arm64 \
	  $(GO) test -tags e2e -count=1 -timeout 40m -run 'TestArm64Bench$$' -v ./e2e/

# Issue 21's slow-host table in the arm64 guest, with the static arm64
# build. BEFORE_ARM64=path/to/an/earlier/arm64/usbflash adds its rows.
bench-slowhost-arm64: cross-deps cross-linux
	USBFLASH_E2E_BIN_ARM64=$(CURDIR)/bin/usbflash-linux-arm64 USBFLASH_E2E_BIN_BEFORE_ARM64=$(BEFORE_ARM64) \
	  $(GO) test -tags e2e -count=1 -timeout 60m -run 'TestSlowHostBenchArm64$$' -v ./e2e/

# Release files into DIST_DIR (tools/dist, internal/dist): for linux amd64,
# arm64, armhf (GOARM=7), i386 and riscv64 the static binary (-trimpath, no
# build id, the version stamped from the commit), a tarball, and .deb, .rpm
# and .apk packages (nfpm) with the udev rule, man pages of every command
# and the bash, zsh and fish completions, generated here from the command
# tree; then SHA256SUMS over them all. PLATFORMS=amd64,arm64 builds some.
# USBFLASH_APK_KEY=key.pem (an RSA key) signs the .apk, USBFLASH_PGP_KEY
# (an OpenPGP secret key) the .rpm and .deb; keys are kept outside the
# repository. Without them the packages are unsigned and the build says so.
DIST_DIR ?= bin/dist
PLATFORMS ?=
dist:
	$(GO) run ./tools/dist -out $(DIST_DIR) $(if $(PLATFORMS),-platforms $(PLATFORMS))

# Two builds of this commit give the same bytes: dist twice, then the two
# SHA256SUMS (over every file) compared. The second build reuses the Go
# build cache; every file is linked and packed again.
dist-repro:
	$(GO) run ./tools/dist -out bin/dist-repro-a $(if $(PLATFORMS),-platforms $(PLATFORMS))
	$(GO) run ./tools/dist -out bin/dist-repro-b $(if $(PLATFORMS),-platforms $(PLATFORMS))
	cmp bin/dist-repro-a/SHA256SUMS bin/dist-repro-b/SHA256SUMS
	cd bin/dist-repro-b && sha256sum --check --quiet SHA256SUMS
	@echo "dist-repro: two builds, identical: $$(wc -l < bin/dist-repro-a/SHA256SUMS) files"; cat bin/dist-repro-a/SHA256SUMS

# The amd64 packages of DIST_DIR checked as their systems would (installs
# lintian, rpm, man-db, bash-completion and zsh when root): lintian without
# errors, the .deb installed by dpkg into a throw-away root, man
# usbflash-write rendered, the completions loaded in bash (completing live
# targets) and zsh, the .rpm's and .apk's file lists.
dist-check:
	.ci/dist-check $(DIST_DIR)

clean:
	rm -rf bin
