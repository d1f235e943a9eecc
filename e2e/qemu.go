//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Controller is the emulated USB host controller the readers hang off.
type Controller string

const (
	XHCI Controller = "xhci"
	EHCI Controller = "ehci"
)

// Fault makes one LUN's backend fail through blkdebug.
type Fault struct {
	Sector int64  // first 512-byte sector that fails (any request covering it fails)
	Errno  int    // default 5 (EIO)
	IOType string // "write" (default) or "read"
}

// LUN is one logical unit of a reader, backed by a host file.
type LUN struct {
	Backing   string // host path of the raw backing file
	ReadOnly  bool
	Removable bool
	NoMedium  bool // removable LUN that starts with its tray empty (Backing unused)
	Fault     *Fault
	// NBD, when set, is the host path of an NBD server's unix socket the
	// LUN's disk comes from instead of Backing (nbdkit: a fake card).
	NBD string
}

// Reader is one emulated USB card reader.
type Reader struct {
	ID     string // qdev id; defaults to r<index>
	Serial string // USB iSerialNumber
	// Bot selects usb-bot with one scsi-hd per LUN (needed for several LUNs
	// or a removable LUN with a tray); otherwise usb-storage with LUNs[0].
	Bot bool
	// UAS selects usb-uas (46f4:0003, UAS only) with one scsi-hd per LUN.
	UAS  bool
	LUNs []LUN
	// Controller is the host controller the reader hangs off; "" is the
	// machine's.
	Controller Controller
}

// MachineSpec describes one guest boot.
type MachineSpec struct {
	Controller Controller
	Readers    []Reader
	QMP        bool
	MemMB      int // default 768
	// Forward gives the guest a network card on QEMU's user network,
	// reaching nothing but these ports: each host port on the host's
	// loopback is forwarded to the guest's port (10.0.2.15 in the
	// guest; guestNet configures it).
	Forward []Forward
}

// Forward is a TCP port of the host's loopback forwarded to the guest's.
type Forward struct{ Host, Guest int }

// guestNet configures the guest's network card (MachineSpec.Forward) at
// the address QEMU's user network forwards to.
const guestNet = "loadmod virtio_net && ip link set lo up && ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0"

// Accel is how qemu runs the guest.
type Accel struct {
	Args []string
	Name string
}

var kvmAccel = Accel{Name: "kvm", Args: []string{"-accel", "kvm", "-cpu", "host", "-smp", "1"}}

// tcgAccel emulates the architecture's CPU with every feature QEMU has.
func tcgAccel(a *Arch) Accel {
	return Accel{Name: "tcg", Args: []string{"-accel", "tcg", "-cpu", a.TCGCPU, "-smp", "1"}}
}

// Machine is a running guest.
type Machine struct {
	Spec  MachineSpec
	Share string // host side of the 9p share, /host in the guest
	QMP   *QMP

	logf    func(string, ...any)
	cmd     *exec.Cmd
	console *syncBuffer
	done    chan struct{}
	waitErr error
	next    int
	Booted  time.Duration // from qemu start to E2E-READY
}

// Result of one guest command script.
type Result struct {
	Stdout, Stderr string
	Code           int
	Took           time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d after %v\n--- stdout\n%s--- stderr\n%s", r.Code, r.Took.Round(time.Millisecond), r.Stdout, r.Stderr)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Env is what every boot needs: the prepared guest, the accel, the binary.
type Env struct {
	Guest    *Guest
	Accel    Accel
	Usbflash string            // host path of the binary under test ("" when it does not build)
	Libs     map[string]string // its shared libraries incl. the loader: guest name -> host path
	// LoadsLibusb: the binary is the libusbdl build, which loads libusb
	// at run time (Libs holds it then too).
	LoadsLibusb bool
	BuildErr    error
	Qemu        string
}

// bootArgs are the qemu arguments common to every boot.
func (e *Env) bootArgs(share string, mem int) []string {
	a := e.Guest.Arch
	kernel := e.Guest.Vmlinux
	if kernel == "" {
		kernel = e.Guest.Kernel
	}
	args := append(append([]string{}, a.Machine...),
		"-m", strconv.Itoa(mem), "-nodefaults", "-no-user-config",
		"-display", "none", "-serial", "stdio", "-no-reboot",
		"-kernel", kernel, "-initrd", e.Guest.Initramfs,
		"-append", strings.TrimSpace("console="+a.Console+" panic=-1 loglevel=3 rdinit=/init "+a.Cmdline),
		"-fsdev", "local,id=fs0,path="+share+",security_model=none",
		"-device", "virtio-9p-pci,fsdev=fs0,mount_tag=host0",
	)
	return append(args, e.Accel.Args...)
}

// Start boots a machine and waits until the guest's command loop runs.
func (e *Env) Start(spec MachineSpec, workdir string, logf func(string, ...any)) (*Machine, error) {
	if spec.MemMB == 0 {
		spec.MemMB = 768
	}
	share := filepath.Join(workdir, "share")
	for _, d := range []string{"q", "bin", "lib", "img"} {
		if err := os.MkdirAll(filepath.Join(share, d), 0o755); err != nil {
			return nil, err
		}
	}
	if e.Usbflash != "" {
		if err := linkOrCopy(e.Usbflash, filepath.Join(share, "bin", "usbflash")); err != nil {
			return nil, err
		}
		for name, l := range e.Libs {
			if err := linkOrCopy(l, filepath.Join(share, "lib", name)); err != nil {
				return nil, err
			}
		}
	}
	var ctrls string
	for _, c := range spec.controllers() {
		if c == EHCI {
			ctrls += "ehci_pci\n"
		} else {
			ctrls += "xhci_pci\n"
		}
	}
	if err := os.WriteFile(filepath.Join(share, "controllers"), []byte(ctrls), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(share, "usb_devices"), []byte(strconv.Itoa(len(spec.Readers))+"\n"), 0o644); err != nil {
		return nil, err
	}
	args := e.bootArgs(share, spec.MemMB)
	devArgs, err := spec.deviceArgs(workdir)
	if err != nil {
		return nil, err
	}
	args = append(args, devArgs...)
	if len(spec.Forward) > 0 {
		// restrict=on: the guest reaches nothing outside; the forwards
		// reach it.
		netdev := "user,id=net0,restrict=on"
		for _, f := range spec.Forward {
			netdev += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", f.Host, f.Guest)
		}
		args = append(args, "-netdev", netdev, "-device", "virtio-net-pci,netdev=net0")
	}
	m := &Machine{Spec: spec, Share: share, logf: logf, console: &syncBuffer{}, done: make(chan struct{})}
	var qmpPath string
	if spec.QMP {
		// unix socket paths are limited to 108 bytes: keep it short.
		d, err := os.MkdirTemp("", "ufq")
		if err != nil {
			return nil, err
		}
		qmpPath = filepath.Join(d, "qmp")
		args = append(args, "-qmp", "unix:"+qmpPath+",server=on,wait=off")
	}
	m.cmd = exec.Command(e.Qemu, args...)
	m.cmd.Stdout = m.console
	m.cmd.Stderr = m.console
	// qemu dies with the test process, even when go test is killed.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf("qemu %s", strings.Join(args, " "))
	start := time.Now()
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		m.waitErr = m.cmd.Wait()
		close(m.done)
		if qmpPath != "" {
			os.RemoveAll(filepath.Dir(qmpPath))
		}
	}()
	deadline := time.After(bootTimeout(e.Accel))
	for !strings.Contains(m.console.String(), "E2E-READY") {
		select {
		case <-m.done:
			return nil, fmt.Errorf("qemu exited during boot (%v):\n%s", m.waitErr, tail(m.console.String(), 3000))
		case <-deadline:
			m.Kill()
			return nil, fmt.Errorf("guest not ready after %v:\n%s", bootTimeout(e.Accel), tail(m.console.String(), 3000))
		case <-time.After(20 * time.Millisecond):
		}
		if strings.Contains(m.console.String(), "E2E-FATAL") {
			m.Kill()
			return nil, fmt.Errorf("guest init failed:\n%s", tail(m.console.String(), 3000))
		}
	}
	m.Booted = time.Since(start)
	logf("guest ready in %v (%s)", m.Booted.Round(time.Millisecond), e.Accel.Name)
	if spec.QMP {
		q, err := dialQMP(qmpPath)
		if err != nil {
			m.Kill()
			return nil, err
		}
		m.QMP = q
	}
	return m, nil
}

func bootTimeout(a Accel) time.Duration {
	if a.Name == "kvm" {
		return 30 * time.Second
	}
	return 90 * time.Second
}

func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// deviceArgs turns the readers into -device / -blockdev arguments.
// controllers are the host controllers the machine needs: its own, and
// those its readers name, each once.
func (s MachineSpec) controllers() []Controller {
	main := s.Controller
	if main == "" {
		main = XHCI
	}
	out := []Controller{main}
	for _, r := range s.Readers {
		if r.Controller != "" && r.Controller != main && len(out) == 1 {
			out = append(out, r.Controller)
		}
	}
	return out
}

func (s MachineSpec) deviceArgs(workdir string) ([]string, error) {
	var args []string
	buses := map[Controller]string{}
	for _, c := range s.controllers() {
		switch c {
		case XHCI:
			args = append(args, "-device", "qemu-xhci,id=xhci,p2=8,p3=8")
			buses[c] = "xhci.0"
		case EHCI:
			args = append(args, "-device", "usb-ehci,id=ehci")
			buses[c] = "ehci.0"
		default:
			return nil, fmt.Errorf("unknown controller %q", c)
		}
	}
	for i, r := range s.Readers {
		id := r.ID
		if id == "" {
			id = fmt.Sprintf("r%d", i)
		}
		if len(r.LUNs) == 0 {
			return nil, fmt.Errorf("reader %s has no LUN", id)
		}
		multi := r.Bot || r.UAS
		if !multi && len(r.LUNs) > 1 {
			return nil, fmt.Errorf("reader %s: several LUNs need Bot or UAS", id)
		}
		bus := buses[s.controllers()[0]]
		if r.Controller != "" {
			bus = buses[r.Controller]
		}
		serial := ""
		if r.Serial != "" {
			serial = ",serial=" + r.Serial
		}
		switch {
		case r.Bot:
			args = append(args, "-device", fmt.Sprintf("usb-bot,id=%s,bus=%s%s", id, bus, serial))
		case r.UAS:
			args = append(args, "-device", fmt.Sprintf("usb-uas,id=%s,bus=%s%s", id, bus, serial))
		}
		for j, l := range r.LUNs {
			drive := fmt.Sprintf("%s-d%d", id, j)
			if !l.NoMedium {
				d, err := driveArg(drive, l, workdir)
				if err != nil {
					return nil, err
				}
				args = append(args, "-drive", d)
			}
			ro := ""
			if l.Removable {
				ro = ",removable=on"
			}
			drv := ""
			if !l.NoMedium {
				drv = ",drive=" + drive
			}
			if multi {
				args = append(args, "-device", fmt.Sprintf("scsi-hd,id=%s-l%d,bus=%s.0,channel=0,scsi-id=0,lun=%d%s%s", id, j, id, j, drv, ro))
			} else {
				if l.NoMedium {
					return nil, fmt.Errorf("reader %s: a LUN without medium needs Bot", id)
				}
				args = append(args, "-device", fmt.Sprintf("usb-storage,id=%s,bus=%s%s%s%s", id, bus, drv, serial, ro))
			}
		}
	}
	return args, nil
}

func driveArg(id string, l LUN, workdir string) (string, error) {
	file := "file=" + l.Backing
	if l.NBD != "" {
		file = "file=nbd:unix:" + l.NBD
	}
	if l.Fault != nil {
		errno := l.Fault.Errno
		if errno == 0 {
			errno = 5
		}
		io := l.Fault.IOType
		if io == "" {
			io = "write"
		}
		event := "write_aio"
		if io == "read" {
			event = "read_aio"
		}
		cfg := filepath.Join(workdir, id+".blkdebug")
		// raw-format fires write_aio / read_aio on every request, which
		// activates the rule; blkdebug then fails any request covering
		// the sector, for as long as the guest runs (once=off).
		rule := fmt.Sprintf("[inject-error]\nevent = \"%s\"\niotype = \"%s\"\nerrno = \"%d\"\nsector = \"%d\"\nonce = \"off\"\n", event, io, errno, l.Fault.Sector)
		if err := os.WriteFile(cfg, []byte(rule), 0o644); err != nil {
			return "", err
		}
		file = "file=blkdebug:" + cfg + ":" + l.Backing
	}
	s := fmt.Sprintf("if=none,id=%s,%s,format=raw,werror=report,rerror=report,cache=writeback", id, file)
	if l.ReadOnly {
		s += ",readonly=on"
	}
	return s, nil
}

// Alive reports whether qemu still runs.
func (m *Machine) Alive() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Console is the serial console so far.
func (m *Machine) Console() string { return m.console.String() }

// Pending is a guest command in flight.
type Pending struct {
	m     *Machine
	n     int
	start time.Time
}

// Start queues a shell script in the guest; it runs after the ones before.
func (m *Machine) Start(script string) *Pending {
	n := m.next
	m.next++
	q := filepath.Join(m.Share, "q")
	tmp := filepath.Join(q, fmt.Sprintf(".%d.sh", n))
	if err := os.WriteFile(tmp, []byte("set -o pipefail 2>/dev/null\n"+script+"\n"), 0o644); err != nil {
		panic(err)
	}
	if err := os.Rename(tmp, filepath.Join(q, fmt.Sprintf("%d.sh", n))); err != nil {
		panic(err)
	}
	return &Pending{m: m, n: n, start: time.Now()}
}

// Done reports whether the command has finished.
func (p *Pending) Done() bool {
	_, err := os.Stat(filepath.Join(p.m.Share, "q", fmt.Sprintf("%d.rc", p.n)))
	return err == nil
}

// Output is what the command printed so far.
func (p *Pending) Output() (stdout, stderr string) {
	q := filepath.Join(p.m.Share, "q")
	o, _ := os.ReadFile(filepath.Join(q, fmt.Sprintf("%d.out", p.n)))
	e, _ := os.ReadFile(filepath.Join(q, fmt.Sprintf("%d.err", p.n)))
	return string(o), string(e)
}

// ErrTimeout is returned when a guest command does not finish in time.
var ErrTimeout = errors.New("guest command timed out")

// Wait waits for the command's exit code.
func (p *Pending) Wait(timeout time.Duration) (Result, error) {
	q := filepath.Join(p.m.Share, "q")
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(filepath.Join(q, fmt.Sprintf("%d.rc", p.n)))
		if err == nil {
			r := Result{Took: time.Since(p.start)}
			r.Stdout, r.Stderr = p.Output()
			r.Code, err = strconv.Atoi(strings.TrimSpace(string(b)))
			return r, err
		}
		if !p.m.Alive() {
			o, e := p.Output()
			return Result{Stdout: o, Stderr: e, Code: -1}, fmt.Errorf("qemu exited (%v) while command %d ran:\n%s", p.m.waitErr, p.n, tail(p.m.Console(), 2000))
		}
		if time.Now().After(deadline) {
			o, e := p.Output()
			return Result{Stdout: o, Stderr: e, Code: -1, Took: time.Since(p.start)}, fmt.Errorf("%w after %v", ErrTimeout, timeout)
		}
		time.Sleep(15 * time.Millisecond)
	}
}

// Run runs a script and waits for it.
func (m *Machine) Run(script string, timeout time.Duration) (Result, error) {
	return m.Start(script).Wait(timeout)
}

// Kill stops qemu at once.
func (m *Machine) Kill() {
	if m.cmd != nil && m.cmd.Process != nil && m.Alive() {
		m.cmd.Process.Kill()
		<-m.done
	}
}

// Shutdown powers the guest off (qemu exits), killing it if it won't.
func (m *Machine) Shutdown() {
	if !m.Alive() {
		return
	}
	if m.QMP != nil {
		m.QMP.Close()
	}
	m.Start("sync; poweroff -f")
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		m.Kill()
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// QMP is a minimal QEMU Machine Protocol client.
type QMP struct {
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

func dialQMP(path string) (*QMP, error) {
	var conn net.Conn
	var err error
	for i := 0; i < 100; i++ {
		conn, err = net.Dial("unix", path)
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("qmp: %w", err)
	}
	q := &QMP{conn: conn, r: bufio.NewReader(conn)}
	if _, err := q.r.ReadBytes('\n'); err != nil { // greeting
		return nil, fmt.Errorf("qmp greeting: %w", err)
	}
	if _, err := q.Exec("qmp_capabilities", nil); err != nil {
		return nil, err
	}
	return q, nil
}

// Exec runs one QMP command and returns its "return" value.
func (q *QMP) Exec(cmd string, args map[string]any) (json.RawMessage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, _ := json.Marshal(req)
	q.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := q.conn.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	for {
		line, err := q.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("qmp %s: %w", cmd, err)
		}
		var resp struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
			Event string `json:"event"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return nil, fmt.Errorf("qmp %s: %w: %s", cmd, err, line)
		}
		if resp.Event != "" {
			continue
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("qmp %s: %s: %s", cmd, resp.Error.Class, resp.Error.Desc)
		}
		return resp.Return, nil
	}
}

// Close closes the QMP connection.
func (q *QMP) Close() { q.conn.Close() }

// ProbeAccel decides once whether KVM can boot the guest (this workplace's
// nested /dev/kvm cannot) and caches the answer. USBFLASH_E2E_ACCEL=tcg|kvm
// overrides.
func (e *Env) ProbeAccel(logf func(string, ...any)) Accel {
	switch os.Getenv("USBFLASH_E2E_ACCEL") {
	case "tcg":
		return tcgAccel(e.Guest.Arch)
	case "kvm":
		return kvmAccel
	}
	if !e.Guest.Arch.native() {
		logf("%s guest on a %s host: TCG", e.Guest.Arch.Name, runtime.GOARCH)
		return tcgAccel(e.Guest.Arch)
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		logf("no usable /dev/kvm (%v): TCG", err)
		return tcgAccel(e.Guest.Arch)
	}
	f.Close()
	ver, _ := exec.Command(e.Qemu, "--version").Output()
	uname, _ := exec.Command("uname", "-rv").Output()
	h := sha256.Sum256([]byte(string(ver) + string(uname) + e.Guest.Package + e.Guest.Vmlinux))
	stamp := filepath.Join(CacheDir(), "accel-"+hex.EncodeToString(h[:8]))
	if b, err := os.ReadFile(stamp); err == nil {
		if strings.TrimSpace(string(b)) == "kvm" {
			return kvmAccel
		}
		return tcgAccel(e.Guest.Arch)
	}
	// Probe: boot with KVM, no readers, and see whether init comes up.
	dir, _ := os.MkdirTemp("", "ufprobe")
	defer os.RemoveAll(dir)
	share := filepath.Join(dir, "share")
	os.MkdirAll(filepath.Join(share, "q"), 0o755)
	os.WriteFile(filepath.Join(share, "q", "0.sh"), []byte("poweroff -f\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second) // a KVM guest is ready in ~2 s
	defer cancel()
	saved := e.Accel
	e.Accel = kvmAccel
	args := e.bootArgs(share, 256)
	e.Accel = saved
	cmd := exec.CommandContext(ctx, e.Qemu, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	cmd.Run()
	res := "tcg"
	if strings.Contains(out.String(), "E2E-READY") {
		res = "kvm"
	}
	logf("KVM probe: %s after %v (%s)", res, time.Since(start).Round(time.Millisecond), strings.TrimSpace(tail(out.String(), 200)))
	os.WriteFile(stamp, []byte(res+"\n"), 0o644)
	if res == "kvm" {
		return kvmAccel
	}
	return tcgAccel(e.Guest.Arch)
}
