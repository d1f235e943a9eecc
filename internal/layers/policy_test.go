package layers

// policy is what each package of the module may import from the module,
// directly. Rules are separated by ";". "a, b < c, d" says that c and d may
// import a and b. A name in capitals is a group: "a, b < G" makes G stand
// for a and b on the left of later rules. Every package of the module needs
// a rule (NONE for one that imports nothing of the module), so a new
// package, or a new arrow between two, fails TestPolicy until this table
// says it is meant. Tests (_test.go) are not held by it: they may use
// internal/testkit and whatever they check. e2e/ and tools/ are the
// harness and the build's helpers: programs, held only by "nothing
// imports cmd/ and internal/testkit outside tests and e2e".
//
// The layers, bottom up: the small helpers (internal/lib) and the error
// classes (internal/failure); the public libraries (scsi, the block-device
// seam pipeline/blockdev, usbms with its backends, the engine pipeline
// with fanout and filedev), which import nothing internal above those;
// image formats; targets (internal/drive); probes; sessions; presenters;
// cmd.
const policy = `
NONE < internal/failure, internal/lib/units, internal/lib/aligned,
  internal/lib/splitmix, internal/lib/flock, internal/lib/buildinfo,
  internal/lib/stopsignal, internal/lib/shown, internal/lib/xxh3, internal/image/xzdec, internal/ui/eventsdoc,
  internal/dist, internal/dist/gendocs, internal/lib/cpuprofile, internal/layers, internal/probe/fakecheck/fakecases,
  internal/testkit/factsonly, internal/testkit/flakyhttp,
  internal/testkit/osimage, internal/testkit/readonly,
  internal/testkit/testfifo, internal/testkit/testpattern,
  internal/testkit/testpgp, internal/lib/diskutil, internal/lib/windisk,
  internal/testkit/scratch, internal/testkit/winetest, internal/testkit/cardfile;

internal/failure < internal/lib/linuxdisk, internal/lib/outfile, scsi;
internal/lib/units < internal/lib/parttable;
internal/failure, internal/lib/units < BASE;
internal/failure, internal/lib/units, internal/lib/aligned,
  internal/lib/flock, internal/lib/linuxdisk, internal/lib/splitmix,
  internal/lib/shown, internal/lib/diskutil, internal/lib/windisk < LIB;

# The public libraries: each other and the helpers below them, nothing
# else internal.
BASE < pipeline/blockdev;
internal/failure, internal/lib/linuxdisk < usbms/usbdev;
BASE, pipeline/blockdev, scsi, usbms/usbdev < usbms;
usbms, usbms/usbdev, internal/lib/aligned, internal/lib/linuxdisk < usbms/usbfs;
usbms, usbms/usbdev, internal/lib/linuxdisk < usbms/libusb;
BASE, usbms, pipeline/blockdev, internal/lib/flock, internal/lib/splitmix < usbms/sim;
usbms, usbms/usbdev, internal/lib/aligned, internal/lib/linuxdisk < usbms/libusbdl;
usbms, usbms/usbdev, usbms/usbfs, usbms/libusb, usbms/libusbdl < usbms/backend;
# The build's backend is usbms/backend's choice: its users import it, not
# usbfs, libusb or libusbdl.
usbms, usbms/usbdev, usbms/backend, usbms/sim < USB;
NONE < internal/lib/xxh3;
BASE, pipeline/blockdev, internal/lib/xxh3, internal/lib/aligned < pipeline;
pipeline/blockdev, internal/lib/aligned < pipeline/fanout;
pipeline/blockdev, internal/failure, internal/lib/flock, internal/lib/linuxdisk < pipeline/filedev;
# A whole disk raw (macOS, Windows): the systems' disk helpers below it.
pipeline/blockdev, internal/failure, internal/lib/aligned, internal/lib/flock,
  internal/lib/diskutil, internal/lib/windisk < pipeline/diskdev;
pipeline, pipeline/blockdev, pipeline/fanout, pipeline/filedev, pipeline/diskdev < ENGINE;

# Images: formats in, block maps, backups out; the network and the cache;
# and the one opening of a session's image (internal/image's Open) over
# all of them: file, standard input, URL, cache entry, catalog entry, with
# the sums, signatures and block maps beside it.
BASE, internal/lib/shown < internal/image/httpsrc, internal/image/catalog;
internal/failure, internal/lib/flock, internal/lib/shown < internal/image/dlcache;
pipeline/blockdev < internal/image/bmap;
BASE, internal/lib/shown, internal/image/xzdec, internal/image/httpsrc,
  internal/image/catalog, internal/image/dlcache, internal/image/bmap < internal/image;
BASE, internal/image/bmap, pipeline, pipeline/blockdev, internal/lib/outfile,
  internal/lib/parttable < internal/image/imagedst;
internal/image, internal/image/httpsrc, internal/image/catalog,
  internal/image/dlcache, internal/image/bmap, internal/image/imagedst < IMAGE;
internal/failure, internal/lib/parttable < internal/customize;
# A card's file system laid out as bytes (format).
internal/lib/units < internal/cardfs;

# Events every session tells: no transport, no engine.
internal/failure < internal/observe;

# Targets: parsing, listing, opening, the checks before a write.
LIB, USB, pipeline/blockdev, pipeline/filedev, pipeline/diskdev,
  internal/observe < internal/drive;

# Probes of a reader and a card.
LIB, pipeline/blockdev < internal/probe/region;
LIB, usbms, pipeline, pipeline/blockdev, pipeline/filedev, internal/drive,
  internal/observe, internal/probe/region < internal/probe/cardbench;
LIB, usbms, pipeline/blockdev, internal/drive, internal/observe,
  internal/probe/region < internal/probe/fakecheck;

# Sessions.
LIB, ENGINE, IMAGE, scsi, usbms, internal/customize, internal/cardfs, internal/drive,
  internal/observe, internal/lib/outfile, internal/probe/cardbench, internal/probe/fakecheck,
  internal/probe/region < internal/session;
# A station: a session taking its cards as they come.
internal/drive, internal/failure, internal/session < internal/station;
internal/failure, internal/observe, internal/session < internal/station/metrics;

# Presenters. The JSON shapes are jsonevents' alone: the libraries return
# plain Go values, which the presenters encode.
internal/customize, internal/image/catalog, internal/probe/cardbench, internal/session,
  pipeline, pipeline/blockdev < internal/ui/jsonevents;
internal/failure, internal/lib/outfile, internal/lib/shown, internal/session, internal/ui/jsonevents < internal/ui/report;
# A station's slot log writes each card's record in the card event's shape.
internal/failure, internal/session, internal/ui/jsonevents < internal/station/slotlog;
internal/lib/units, internal/lib/shown, internal/drive < internal/ui/readerinfo;
internal/lib/units, internal/lib/shown, internal/image/catalog, internal/ui/jsonevents < internal/ui/catalogview;
BASE, internal/lib/shown, internal/drive, internal/image, internal/session, pipeline, usbms,
  internal/ui/jsonevents, internal/ui/readerinfo < internal/ui/termui;
BASE, internal/lib/parttable, internal/lib/shown, internal/drive, internal/image,
  internal/image/imagedst, internal/observe, internal/session, internal/probe/fakecheck,
  internal/ui/jsonevents, internal/ui/termui, pipeline < internal/ui/sessionview;
internal/lib/units, internal/lib/outfile, internal/probe/cardbench, internal/session,
  internal/ui/jsonevents, internal/ui/sessionview, internal/ui/termui < internal/ui/benchview;
internal/drive, usbms/usbdev < internal/ui/complete;
internal/ui/eventsdoc < internal/ui/eventsdoc/gen;
internal/customize, internal/drive, internal/image/catalog, internal/ui/jsonevents,
  internal/ui/readerinfo, internal/ui/termui < internal/ui/web;
NONE < internal/ui/web/browsertest; # its tests drive the page in a browser

# Test helpers that build on the module (tests only: see TestTestkitOnlyInTests).
internal/drive < internal/testkit/simcards;
internal/image/bmap, internal/testkit/testpattern < internal/testkit/testimage;
internal/lib/flock < internal/testkit/testtargets;
internal/lib/parttable < internal/testkit/fsck;
`
