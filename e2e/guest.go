//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Guest preparation: a Debian kernel (never installed on the host, only
// unpacked), its uncompressed vmlinux for a PVH boot, and a busybox initramfs
// with the few modules the guest needs. Everything is cached outside git in
// CacheDir(), keyed by the kernel package version and a hash of the inputs.
// The usbflash binary and its shared libraries are NOT in the initramfs: they
// reach the guest per boot through the 9p share, so a rebuilt binary needs no
// re-preparation.

//go:embed guest/init.sh guest/loadmod.sh guest/usbserial.sh guest/sdbyserial.sh
var guestFiles embed.FS

// prepVersion changes whenever the layout of the prepared guest changes.
const prepVersion = "3"

// guestModules are the module groups the initramfs carries, each with its
// dependencies (resolved from the modules' .modinfo), and optional insmod
// parameters of the named module itself.
var guestModules = map[string]string{
	"virtio_pci":   "",
	"9pnet_virtio": "",
	"9p":           "",
	"xhci_pci":     "",
	"ehci_pci":     "",
	"usb_storage":  "delay_use=0",
	"uas":          "",
	"sd_mod":       "",
	"vfat":         "",
	// exfat: TestCustomize mounts a card usbflash format gave exFAT.
	"exfat":     "",
	"nls_cp437": "",
	"nls_ascii": "",
	"nls_utf8":  "",
	// usbmon: TestTraceMatchesKernel reads the guest's USB traffic with it.
	"usbmon": "",
	// virtio_net: TestServePage's browser on the host reaches the page
	// served in the guest through QEMU's user network.
	"virtio_net": "",
}

// Arch is what differs between the guest architectures: the rest of the
// preparation (kernel package, modules, initramfs, 9p share, command loop)
// is shared.
type Arch struct {
	Name     string   // Debian and Go architecture: amd64, arm64
	Qemu     string   // qemu-system-x86_64
	QemuPkg  string   // the Debian package that has Qemu
	Machine  []string // board and its options
	Console  string   // the serial console's device in the guest
	TCGCPU   string   // -cpu under TCG
	Cmdline  string   // kernel arguments beyond console, panic, loglevel, rdinit
	Triplet  string   // multiarch triplet: where the host keeps this arch's libraries
	PVH      bool     // boot the vmlinux extracted from the bzImage (x86 only)
	CacheSub string   // subdirectory of CacheDir(); "" for amd64 (the cache predates arm64)
}

var (
	// ArchAMD64 boots Debian's amd64 kernel on the PC board.
	ArchAMD64 = &Arch{Name: "amd64", Qemu: "qemu-system-x86_64", QemuPkg: "qemu-system-x86",
		Machine: []string{"-M", "pc"}, Console: "ttyS0", TCGCPU: "max", Cmdline: "tsc=reliable no_timer_check",
		Triplet: "x86_64-linux-gnu", PVH: true}
	// ArchARM64 boots Debian's arm64 kernel Image on QEMU's virt board
	// (GICv3, PCIe host bridge: the same PCI devices as the PC).
	ArchARM64 = &Arch{Name: "arm64", Qemu: "qemu-system-aarch64", QemuPkg: "qemu-system-arm",
		Machine: []string{"-M", "virt,gic-version=3"}, Console: "ttyAMA0",
		// QARMA pointer authentication costs TCG much; the
		// implementation-defined algorithm is the cheap one.
		TCGCPU:  "max,pauth-impdef=on",
		Triplet: "aarch64-linux-gnu", CacheSub: "arm64"}
)

// native reports whether the host runs this architecture (it then has
// KVM, a static busybox and the C libraries installed natively).
func (a *Arch) native() bool { return a.Name == runtime.GOARCH }

// aptName is a package name as apt must be asked for this architecture.
func (a *Arch) aptName(pkg string) string {
	if a.native() {
		return pkg
	}
	return pkg + ":" + a.Name
}

// LibDirs are where the host keeps this architecture's shared libraries
// (Debian multiarch; a foreign architecture's come from `apt-get install
// libfoo:arm64`).
func (a *Arch) LibDirs() []string {
	return []string{"/lib/" + a.Triplet, "/usr/lib/" + a.Triplet, "/usr/" + a.Triplet + "/lib", "/lib", "/usr/lib"}
}

// Cache is this architecture's cache directory.
func (a *Arch) Cache() string { return filepath.Join(CacheDir(), a.CacheSub) }

// Guest is a prepared guest: what qemu boots.
type Guest struct {
	Arch          *Arch
	KernelRelease string // e.g. 6.1.0-57-amd64
	Package       string // e.g. linux-image-6.1.0-57-amd64_6.1.192-3
	Vmlinux       string // uncompressed ELF with a PVH note (amd64; "" otherwise)
	Kernel        string // the package's vmlinuz: a bzImage or an arm64 Image
	Initramfs     string // uncompressed newc cpio
}

// CacheDir is where downloads and the prepared guest live.
func CacheDir() string {
	if d := os.Getenv("USBFLASH_E2E_CACHE"); d != "" {
		return d
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "usbflash-e2e")
	}
	return filepath.Join(os.TempDir(), "usbflash-e2e-cache")
}

// PrepareGuest returns the cached guest of an architecture, preparing it
// first if needed. logf receives progress lines.
func PrepareGuest(arch *Arch, logf func(string, ...any)) (*Guest, error) {
	cache := arch.Cache()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	kdir, err := kernelDir(arch, logf)
	if err != nil {
		return nil, err
	}
	rels, err := os.ReadDir(filepath.Join(kdir, "lib", "modules"))
	if err != nil || len(rels) != 1 {
		return nil, fmt.Errorf("kernel cache %s: expected one lib/modules/<release>: %v", kdir, err)
	}
	g := &Guest{
		Arch:          arch,
		KernelRelease: rels[0].Name(),
		Package:       filepath.Base(kdir),
		Kernel:        filepath.Join(kdir, "vmlinuz"),
	}
	if arch.PVH {
		g.Vmlinux = filepath.Join(kdir, "vmlinux")
		if _, err := os.Stat(g.Vmlinux); err != nil {
			logf("extracting vmlinux from %s", g.Kernel)
			if err := extractVmlinux(g.Kernel, g.Vmlinux); err != nil {
				logf("cannot extract vmlinux (%v): booting the bzImage instead", err)
				g.Vmlinux = ""
			}
		}
	}
	busybox, err := findBusybox(arch, logf)
	if err != nil {
		return nil, err
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return nil, err
	}
	initSh, _ := guestFiles.ReadFile("guest/init.sh")
	loadmodSh, _ := guestFiles.ReadFile("guest/loadmod.sh")

	h := sha256.New()
	fmt.Fprintf(h, "v%s\n%s\n", prepVersion, g.Package)
	h.Write(initSh)
	h.Write(loadmodSh)
	extra := map[string][]byte{}
	for _, n := range []string{"usbserial", "sdbyserial"} {
		b, _ := guestFiles.ReadFile("guest/" + n + ".sh")
		extra[n] = b
		h.Write(b)
	}
	h.Write(bb)
	names := make([]string, 0, len(guestModules))
	for n := range guestModules {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s %s\n", n, guestModules[n])
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	g.Initramfs = filepath.Join(kdir, "initramfs-"+key+".cpio")
	if _, err := os.Stat(g.Initramfs); err == nil {
		return g, nil
	}
	logf("building initramfs %s", g.Initramfs)
	modRoot := filepath.Join(kdir, "lib", "modules", g.KernelRelease)
	groups, files, err := resolveModules(modRoot, names)
	if err != nil {
		return nil, err
	}
	var cp cpioWriter
	for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "lib", "lib/modules", "lib/modules/groups", "dev", "proc", "sys", "tmp", "host", "etc", "root"} {
		cp.dir(d)
	}
	cp.file("init", initSh, 0o755)
	cp.file("bin/busybox", bb, 0o755)
	cp.file("bin/loadmod", loadmodSh, 0o755)
	for _, n := range []string{"usbserial", "sdbyserial"} {
		cp.file("bin/"+n, extra[n], 0o755)
	}
	seenDir := map[string]bool{}
	for _, rel := range files {
		for d := filepath.Dir(rel); d != "." && !seenDir[d]; d = filepath.Dir(d) {
			seenDir[d] = true
		}
	}
	dirs := make([]string, 0, len(seenDir))
	for d := range seenDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		cp.dir("lib/modules/" + d)
	}
	for _, rel := range files {
		b, err := readModule(filepath.Join(modRoot, rel))
		if err != nil {
			return nil, err
		}
		cp.file("lib/modules/"+strings.TrimSuffix(strings.TrimSuffix(rel, ".xz"), ".zst"), b, 0o644)
	}
	for _, n := range names {
		var lines []string
		for _, rel := range groups[n] {
			rel = strings.TrimSuffix(strings.TrimSuffix(rel, ".xz"), ".zst")
			line := rel
			if modName(rel) == n && guestModules[n] != "" {
				line += " " + guestModules[n]
			}
			lines = append(lines, line)
		}
		cp.file("lib/modules/groups/"+n, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		// Also reachable with dashes (usb-storage, xhci-pci).
		if d := strings.ReplaceAll(n, "_", "-"); d != n {
			cp.symlink("lib/modules/groups/"+d, n)
		}
	}
	return g, writeAtomic(g.Initramfs, cp.finish())
}

// kernelDir returns the cache directory of the unpacked kernel package,
// downloading it with apt-get if needed. USBFLASH_E2E_KERNEL_DEB names a .deb
// to use instead of asking apt (amd64 only).
func kernelDir(arch *Arch, logf func(string, ...any)) (string, error) {
	cache := arch.Cache()
	deb := ""
	if arch == ArchAMD64 {
		deb = os.Getenv("USBFLASH_E2E_KERNEL_DEB")
	}
	var pkg, ver string
	if deb == "" {
		var err error
		pkg, ver, err = aptCandidate(arch, "linux-image-"+arch.Name, logf)
		if err != nil {
			// Offline: any kernel prepared before will do.
			if m, _ := filepath.Glob(filepath.Join(cache, "linux-image-*", "vmlinuz")); len(m) > 0 {
				sort.Strings(m)
				logf("apt unavailable (%v); using cached %s", err, filepath.Dir(m[len(m)-1]))
				return filepath.Dir(m[len(m)-1]), nil
			}
			return "", fmt.Errorf("cannot find a Debian kernel package: %w", err)
		}
	} else {
		out, err := exec.Command("dpkg-deb", "-W", "--showformat=${Package} ${Version}", deb).Output()
		if err != nil {
			return "", fmt.Errorf("dpkg-deb -W %s: %w", deb, err)
		}
		f := strings.Fields(string(out))
		if len(f) != 2 {
			return "", fmt.Errorf("dpkg-deb -W %s: %q", deb, out)
		}
		pkg, ver = f[0], f[1]
	}
	kdir := filepath.Join(cache, debDirName(pkg, ver))
	if _, err := os.Stat(filepath.Join(kdir, "vmlinuz")); err == nil {
		return kdir, nil
	}
	x, cleanup, err := debUnpack(cache, deb, pkg, ver, logf)
	if err != nil {
		return "", err
	}
	defer cleanup()
	// Keep only what the guest needs: vmlinuz, System.map-less, the modules
	// tree's kernel/ (a few MB are used, but the resolver needs the tree).
	// Several test processes may prepare at once: build in a private
	// directory and rename it into place; the first one wins.
	tmp, err := os.MkdirTemp(cache, "kernel-tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	vm, _ := filepath.Glob(filepath.Join(x, "boot", "vmlinuz-*"))
	if len(vm) != 1 {
		return "", fmt.Errorf("%s has no single boot/vmlinuz-*: %v", pkg, vm)
	}
	rel := strings.TrimPrefix(filepath.Base(vm[0]), "vmlinuz-")
	src := filepath.Join(x, "lib", "modules", rel)
	dst := filepath.Join(tmp, "lib", "modules", rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(src, dst); err != nil {
		return "", err
	}
	if err := os.Rename(vm[0], filepath.Join(tmp, "vmlinuz")); err != nil {
		return "", err
	}
	cfg, _ := filepath.Glob(filepath.Join(x, "boot", "config-*"))
	for _, c := range cfg {
		os.Rename(c, filepath.Join(tmp, "config"))
	}
	if err := os.Rename(tmp, kdir); err != nil {
		if _, e := os.Stat(filepath.Join(kdir, "vmlinuz")); e == nil {
			return kdir, nil // another process was first
		}
		return "", err
	}
	return kdir, nil
}

// debDirName is the cache directory name of an unpacked package version
// (no ":arch" qualifier, no epoch colon).
func debDirName(pkg, ver string) string {
	pkg, _, _ = strings.Cut(pkg, ":")
	return pkg + "_" + strings.ReplaceAll(ver, ":", "%3a")
}

// debUnpack unpacks a package into a temporary directory under cache: the
// .deb at deb, or pkg=ver fetched with apt-get download. cleanup removes it.
func debUnpack(cache, deb, pkg, ver string, logf func(string, ...any)) (dir string, cleanup func(), err error) {
	dl, err := os.MkdirTemp(cache, "dl-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dl) }
	if deb == "" {
		logf("apt-get download %s=%s", pkg, ver)
		cmd := exec.Command("apt-get", "download", pkg+"="+ver)
		cmd.Dir = dl
		if out, err := cmd.CombinedOutput(); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("apt-get download %s: %v\n%s", pkg, err, out)
		}
		m, _ := filepath.Glob(filepath.Join(dl, "*.deb"))
		if len(m) != 1 {
			cleanup()
			return "", nil, fmt.Errorf("apt-get download %s left %v", pkg, m)
		}
		deb = m[0]
	}
	x := filepath.Join(dl, "x")
	if out, err := exec.Command("dpkg-deb", "-x", deb, x).CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("dpkg-deb -x %s: %v\n%s", deb, err, out)
	}
	return x, cleanup, nil
}

// DebFiles returns the cached unpacked tree of an architecture's package
// (busybox-static, xz-utils, ...), fetching it with apt-get download first
// if needed. Nothing is installed on the host.
func DebFiles(arch *Arch, pkg string, logf func(string, ...any)) (string, error) {
	name, ver, err := aptCandidate(arch, pkg, logf)
	if err != nil {
		if m, _ := filepath.Glob(filepath.Join(arch.Cache(), "deb", pkg+"_*")); len(m) > 0 {
			sort.Strings(m)
			logf("apt unavailable (%v); using cached %s", err, m[len(m)-1])
			return m[len(m)-1], nil
		}
		return "", err
	}
	dst := filepath.Join(arch.Cache(), "deb", debDirName(name, ver))
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	x, cleanup, err := debUnpack(arch.Cache(), "", name, ver, logf)
	if err != nil {
		return "", err
	}
	defer cleanup()
	if err := os.Rename(x, dst); err != nil {
		if _, e := os.Stat(dst); e == nil {
			return dst, nil // another process was first
		}
		return "", err
	}
	return dst, nil
}

// aptCandidate names the package apt would install for pkg on arch and its
// version; a metapackage (linux-image-arm64) resolves to the package it
// depends on. On a fresh machine without package lists it runs apt-get
// update once (as root).
func aptCandidate(arch *Arch, pkg string, logf func(string, ...any)) (name, ver string, err error) {
	name, ver, err = aptPolicy(arch, pkg)
	if err != nil && os.Geteuid() == 0 {
		logf("%v: running apt-get update", err)
		if out, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			logf("apt-get update: %v\n%s", uerr, out)
		}
		name, ver, err = aptPolicy(arch, pkg)
	}
	return name, ver, err
}

func aptPolicy(arch *Arch, pkg string) (name, ver string, err error) {
	name = arch.aptName(pkg)
	if strings.HasPrefix(pkg, "linux-image-") {
		out, err := exec.Command("apt-cache", "depends", name).Output()
		if err != nil {
			return "", "", fmt.Errorf("apt-cache depends %s: %w", name, err)
		}
		dep := ""
		for _, l := range strings.Split(string(out), "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "Depends: linux-image-") {
				dep = strings.TrimPrefix(l, "Depends: ")
				break
			}
		}
		if dep == "" {
			return "", "", fmt.Errorf("apt-cache depends %s: no linux-image dependency (run apt-get update?)", name)
		}
		name, _, _ = strings.Cut(dep, ":")
		name = arch.aptName(name)
	}
	out, err := exec.Command("apt-cache", "policy", name).Output()
	if err != nil {
		return "", "", fmt.Errorf("apt-cache policy %s: %w", name, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Candidate:") {
			ver = strings.TrimSpace(strings.TrimPrefix(l, "Candidate:"))
		}
	}
	if ver == "" || ver == "(none)" {
		return "", "", fmt.Errorf("apt-cache policy %s: no candidate (for a foreign architecture: dpkg --add-architecture %s && apt-get update)", name, arch.Name)
	}
	return name, ver, nil
}

// findBusybox returns a static busybox for the guest: the host's for the
// host's architecture, else busybox-static of that architecture unpacked
// from its package.
func findBusybox(arch *Arch, logf func(string, ...any)) (string, error) {
	cands := []string{os.Getenv("USBFLASH_E2E_BUSYBOX"), "/bin/busybox", "/usr/bin/busybox"}
	if !arch.native() {
		dir, err := DebFiles(arch, "busybox-static", logf)
		if err != nil {
			return "", fmt.Errorf("no %s busybox: %w", arch.Name, err)
		}
		cands = []string{filepath.Join(dir, "bin", "busybox")}
	}
	for _, p := range cands {
		if p == "" {
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p, nil
		}
	}
	return "", fmt.Errorf("no static %s busybox found (apt-get install busybox-static)", arch.Name)
}

// LibClosure lists the shared libraries an ELF executable needs, the
// dynamic loader included, resolved in the architecture's host library
// directories, recursively: what ldd prints, but also for a foreign
// architecture's binary, which ldd cannot run. The result maps the name
// the guest's loader will look for (the soname, or the loader's base name)
// to the host file.
// Directories in extra are searched first (packages unpacked by DebFiles).
func LibClosure(arch *Arch, bin string, extra ...string) (map[string]string, error) {
	out := map[string]string{}
	var visit func(p string) error
	visit = func(p string) error {
		f, err := elf.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			b, err := io.ReadAll(prog.Open())
			if err != nil {
				return fmt.Errorf("%s: PT_INTERP: %w", p, err)
			}
			interp := strings.TrimRight(string(b), "\x00")
			name := filepath.Base(interp)
			if _, ok := out[name]; !ok {
				real, err := findLib(arch, name, extra)
				if err != nil {
					return fmt.Errorf("%s: loader %s: %w", p, interp, err)
				}
				out[name] = real
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return nil // static
		}
		for _, l := range libs {
			if _, ok := out[l]; ok {
				continue
			}
			real, err := findLib(arch, l, extra)
			if err != nil {
				return fmt.Errorf("%s needs %s: %w", p, l, err)
			}
			out[l] = real
			if err := visit(real); err != nil {
				return err
			}
		}
		return nil
	}
	return out, visit(bin)
}

// findLib finds a library of the architecture on the host (following
// symlinks to the file itself).
func findLib(arch *Arch, name string, extra []string) (string, error) {
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM}[arch.Name]
	for _, d := range append(append([]string{}, extra...), arch.LibDirs()...) {
		p, err := filepath.EvalSymlinks(filepath.Join(d, name))
		if err != nil {
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		m := f.Machine
		f.Close()
		if m == want {
			return p, nil
		}
	}
	return "", fmt.Errorf("no %s %s in %v (apt-get install the library's package for %s)", arch.Name, name, arch.LibDirs(), arch.Name)
}

// modName is the kernel's name for a module file: basename without .ko*,
// dashes as underscores.
func modName(path string) string {
	b := filepath.Base(path)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

// resolveModules maps each wanted module to its load order (dependencies
// first) using the depends= field of each module's .modinfo section, and
// returns the union of files. The Debian package has no modules.dep (depmod
// runs at install time), so this is the resolver.
func resolveModules(root string, want []string) (map[string][]string, []string, error) {
	index := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(d.Name(), ".ko") {
			rel, _ := filepath.Rel(root, p)
			index[modName(p)] = rel
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	depCache := map[string][]string{}
	deps := func(name string) ([]string, error) {
		if d, ok := depCache[name]; ok {
			return d, nil
		}
		rel, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("module %s not found under %s (built in?)", name, root)
		}
		b, err := readModule(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		sec := f.Section(".modinfo")
		var out []string
		if sec != nil {
			data, _ := sec.Data()
			for _, kv := range bytes.Split(data, []byte{0}) {
				if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok && len(v) > 0 {
					for _, d := range strings.Split(string(v), ",") {
						out = append(out, strings.ReplaceAll(d, "-", "_"))
					}
				}
			}
		}
		depCache[name] = out
		return out, nil
	}
	groups := map[string][]string{}
	all := map[string]bool{}
	for _, w := range want {
		var order []string
		seen := map[string]bool{}
		var visit func(string) error
		visit = func(n string) error {
			if seen[n] {
				return nil
			}
			seen[n] = true
			ds, err := deps(n)
			if err != nil {
				return err
			}
			for _, d := range ds {
				if err := visit(d); err != nil {
					return err
				}
			}
			order = append(order, index[n])
			return nil
		}
		if err := visit(w); err != nil {
			return nil, nil, err
		}
		groups[w] = order
		for _, o := range order {
			all[o] = true
		}
	}
	files := make([]string, 0, len(all))
	for f := range all {
		files = append(files, f)
	}
	sort.Strings(files)
	return groups, files, nil
}

// readModule reads a .ko, decompressing .ko.xz / .ko.zst so busybox insmod
// needs no decompressor.
func readModule(p string) ([]byte, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasSuffix(p, ".xz"):
		r, err := xz.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		return io.ReadAll(r)
	case strings.HasSuffix(p, ".zst"):
		r, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
	return b, nil
}

// extractVmlinux finds the compressed payload inside a bzImage (the
// kernel's scripts/extract-vmlinux, reimplemented): try each known magic at
// each offset until one decompresses to an ELF file.
func extractVmlinux(bz, out string) error {
	data, err := os.ReadFile(bz)
	if err != nil {
		return err
	}
	type method struct {
		magic []byte
		open  func(io.Reader) (io.Reader, error)
	}
	methods := []method{
		// The kernel's xz stream uses the x86 BCJ filter, which the Go xz
		// package lacks: use xz(1) (xz-utils is a required Debian package).
		{[]byte("\xfd7zXZ\x00"), func(r io.Reader) (io.Reader, error) {
			cmd := exec.Command("xz", "-dc")
			cmd.Stdin = r
			out, _ := cmd.Output() // trailing garbage makes xz fail after the stream
			return bytes.NewReader(out), nil
		}},
		{[]byte("\x28\xb5\x2f\xfd"), func(r io.Reader) (io.Reader, error) {
			d, err := zstd.NewReader(r)
			return d, err
		}},
		{[]byte("\x1f\x8b\x08"), func(r io.Reader) (io.Reader, error) {
			z, err := gzip.NewReader(r)
			if err == nil {
				z.Multistream(false)
			}
			return z, err
		}},
	}
	for _, m := range methods {
		for off := 0; ; {
			i := bytes.Index(data[off:], m.magic)
			if i < 0 {
				break
			}
			off += i
			r, err := m.open(bytes.NewReader(data[off:]))
			if err == nil {
				var buf bytes.Buffer
				// An error after the stream (trailing garbage) is normal.
				_, _ = io.Copy(&buf, r)
				b := buf.Bytes()
				// Trailing garbage after the stream is normal; what was
				// decoded counts if it is an ELF file.
				if len(b) > 4 && string(b[:4]) == "\x7fELF" {
					if _, e := elf.NewFile(bytes.NewReader(b)); e == nil {
						return writeAtomic(out, b)
					}
				}
			}
			off++
		}
	}
	return errors.New("no compressed ELF payload found")
}

// cpioWriter writes a newc ("070701") archive.
type cpioWriter struct {
	buf bytes.Buffer
	ino int
}

func (c *cpioWriter) entry(name string, mode uint32, data []byte) {
	c.ino++
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	c.buf.WriteString(hdr)
	c.buf.WriteString(name)
	c.buf.WriteByte(0)
	c.pad()
	c.buf.Write(data)
	c.pad()
}

func (c *cpioWriter) pad() {
	for c.buf.Len()%4 != 0 {
		c.buf.WriteByte(0)
	}
}

func (c *cpioWriter) dir(name string)                      { c.entry(name, 0o040755, nil) }
func (c *cpioWriter) file(name string, b []byte, p uint32) { c.entry(name, 0o100000|p, b) }
func (c *cpioWriter) symlink(name, target string)          { c.entry(name, 0o120777, []byte(target)) }
func (c *cpioWriter) finish() []byte {
	c.entry("TRAILER!!!", 0, nil)
	return c.buf.Bytes()
}

// writeAtomic writes a file under a private name and renames it into place,
// so concurrent preparations never see a partial file.
func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
