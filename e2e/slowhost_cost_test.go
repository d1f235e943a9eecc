//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

// cmdCost is what one command cost in the slow-host guest, in units that
// carry from the emulator to a real host of the same architecture
// (issue 45): its system calls, context switches and page faults, beside
// the guest's seconds, which do not.
type cmdCost struct {
	wall float64 // guest seconds, the command's start to its exit
	// The command's process (busybox `time -v`: the rusage of the child
	// it waited for, every thread of it).
	user, sys            float64
	vol, invol           int64
	minFaults, majFaults int64
	// sysSwitches is /proc/stat's ctxt over the command: every task's
	// switches, the kernel's threads that do dd's USB work included
	// (usb-storage's, the block layer's) and the guest's idle ones.
	sysSwitches int64
	// syscalls are the command's threads' system calls (ftrace's
	// raw_syscalls:sys_enter, counted in a hist trigger by their
	// name); -1 where they were not counted.
	syscalls int64
	// io is what usbflash counted of its own (the --json summary's cost
	// and verify_cost, added): nil for dd and for a build that does not
	// count.
	io *ioCost
	// memory is the summary's memory: what usbflash's buffers were.
	memory string
}

// ioCost is the --json summary's cost.io.
type ioCost = jsonevents.IOCounts

// switches are the process's context switches, voluntary and not.
func (c cmdCost) switches() int64 { return c.vol + c.invol }

// costScript is a guest script that runs cmd (a program and its
// arguments, no redirection or shell syntax of its own: busybox `time`
// execs it) with its output in /tmp/out, and prints what it cost for
// parseCost. With comm set, the system calls of every thread named comm
// (the kernel's comm: the executable's name, 15 bytes at most) are
// counted by an ftrace hist trigger on raw_syscalls:sys_enter; that slows
// every system call of the guest a little, so a timed run leaves it out.
// pre is shell run first (variables, a device's path).
func costScript(pre, cmd, comm string) string {
	var s strings.Builder
	s.WriteString(pre + "\n")
	const trig = "/sys/kernel/tracing/events/raw_syscalls/sys_enter/trigger"
	const hist = "hist:keys=common_pid.execname:vals=hitcount:size=4096"
	if comm != "" {
		fmt.Fprintf(&s, "[ -e %s ] || mount -t tracefs nodev /sys/kernel/tracing || exit 98\n", trig)
		fmt.Fprintf(&s, "echo '%s' >%s || exit 98\n", hist, trig)
	}
	s.WriteString("c0=$(awk '/^ctxt/{print $2}' /proc/stat); t0=$(cut -d' ' -f1 /proc/uptime)\n")
	// The command runs in a shell that says its pid and execs it (dd
	// may be a busybox applet the shell runs in its own process): its
	// system calls are that pid's and, for a program with threads,
	// those of every thread of its name.
	s.WriteString("busybox time -v -o /tmp/tv sh -c 'echo $$ >/tmp/cmdpid; exec " + cmd + "' >/tmp/out 2>&1\n")
	s.WriteString("rc=$?; t1=$(cut -d' ' -f1 /proc/uptime); c1=$(awk '/^ctxt/{print $2}' /proc/stat)\n")
	if comm != "" {
		fmt.Fprintf(&s, "sed -n 's/^{ common_pid: *\\([^ ]*\\) *\\[ *\\([0-9]*\\)\\] *} hitcount: *\\([0-9]*\\)$/SYSCALLS \\1 \\2 \\3/p' %s\n",
			strings.TrimSuffix(trig, "trigger")+"hist")
		fmt.Fprintf(&s, "echo '!%s' >%s\n", hist, trig)
		fmt.Fprintf(&s, "echo \"COMM %s $(cat /tmp/cmdpid)\"\n", comm)
	}
	s.WriteString("[ $rc = 0 ] || cat /tmp/out\necho \"ELAPSED $t0 $t1\"; echo \"CTXT $c0 $c1\"; sed 's/^/TIMEV /' /tmp/tv\n")
	// The --json events but progress (TestSlowHostAB splits a write's
	// time by them).
	s.WriteString("grep '^{' /tmp/out | grep -v '\"event\":\"progress\"'\n")
	return s.String()
}

var timevRe = regexp.MustCompile(`(?m)^TIMEV\s+(.+?):\s+([0-9.]+)\s*$`)

// parseCost reads what costScript printed.
func parseCost(out string) (cmdCost, error) {
	c := cmdCost{wall: elapsedOf(out), syscalls: -1}
	if c.wall <= 0 {
		return c, fmt.Errorf("no elapsed time")
	}
	tv := map[string]string{}
	for _, m := range timevRe.FindAllStringSubmatch(out, -1) {
		tv[strings.TrimSpace(m[1])] = m[2]
	}
	num := func(key string) (float64, error) {
		v, ok := tv[key]
		if !ok {
			return 0, fmt.Errorf("time -v printed no %q", key)
		}
		return strconv.ParseFloat(v, 64)
	}
	var err error
	fields := []struct {
		key string
		f   *float64
		i   *int64
	}{
		{"User time (seconds)", &c.user, nil}, {"System time (seconds)", &c.sys, nil},
		{"Voluntary context switches", nil, &c.vol}, {"Involuntary context switches", nil, &c.invol},
		{"Minor (reclaiming a frame) page faults", nil, &c.minFaults}, {"Major (requiring I/O) page faults", nil, &c.majFaults},
	}
	for _, f := range fields {
		v, ferr := num(f.key)
		if ferr != nil {
			err = ferr
			continue
		}
		if f.f != nil {
			*f.f = v
		} else {
			*f.i = int64(v)
		}
	}
	if err != nil {
		return c, err
	}
	comm, pid := "", ""
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "CTXT":
			c0, _ := strconv.ParseInt(f[1], 10, 64)
			c1, _ := strconv.ParseInt(f[2], 10, 64)
			c.sysSwitches = c1 - c0
		case len(f) == 3 && f[0] == "COMM":
			comm, pid = f[1], f[2]
		}
	}
	if comm != "" {
		c.syscalls = 0
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) == 4 && f[0] == "SYSCALLS" && (f[1] == comm || f[2] == pid) {
				n, _ := strconv.ParseInt(f[3], 10, 64)
				c.syscalls += n
			}
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, `{"event":"summary"`) {
			continue
		}
		var sum struct {
			Memory           string
			Cost, VerifyCost *struct {
				IO *ioCost `json:"io"`
			}
		}
		if json.Unmarshal([]byte(l), &sum) != nil {
			continue
		}
		c.memory = sum.Memory
		for _, part := range []*struct {
			IO *ioCost `json:"io"`
		}{sum.Cost, sum.VerifyCost} {
			if part == nil || part.IO == nil {
				continue
			}
			if c.io == nil {
				c.io = &ioCost{}
			}
			c.io.Commands += part.IO.Commands
			c.io.Submits += part.IO.Submits
			c.io.Reaps += part.IO.Reaps
			c.io.Waits += part.IO.Waits
			c.io.Other += part.IO.Other
			c.io.Syscalls += part.IO.Syscalls
		}
	}
	return c, nil
}

// costs are the runs of one method, summed; n of them.
type costs struct {
	n                                                int
	wall, cpu                                        float64
	switches, sysSwitches, minFaults, majFaults      int64
	syscalls                                         int64 // summed over the counted runs
	counted                                          int   // runs whose syscalls were counted
	ioRuns                                           int
	memory                                           string // the last run's
	commands, ioSyscalls, waits, submits, reaps, oth int64
}

// add counts one run in.
func (s *costs) add(c cmdCost) {
	s.n++
	s.wall += c.wall
	s.cpu += c.user + c.sys
	s.switches += c.switches()
	s.sysSwitches += c.sysSwitches
	s.minFaults += c.minFaults
	s.majFaults += c.majFaults
	if c.syscalls >= 0 {
		s.syscalls += c.syscalls
		s.counted++
	}
	if c.memory != "" {
		s.memory = c.memory
	}
	if c.io != nil {
		s.ioRuns++
		s.commands += c.io.Commands
		s.ioSyscalls += c.io.Syscalls
		s.waits += c.io.Waits
		s.submits += c.io.Submits
		s.reaps += c.io.Reaps
		s.oth += c.io.Other
	}
}

// perGiB is a count over the runs per GiB written by each (mib MiB).
func perGiB(total int64, runs, mib int) float64 {
	if runs == 0 {
		return -1
	}
	return float64(total) / float64(runs) / (float64(mib) / 1024)
}

// cell prints v, or "-" for a value not measured (negative).
func cell(format string, v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// tmpfsHuge remounts the guest's /tmp, where the images are put, with
// huge= as USBFLASH_E2E_BENCH_TMPFS_HUGE says (within_size, advise,
// always), so that a run shows the mapped image's faults where the host
// gives its page cache huge pages; nothing when it is unset.
func tmpfsHuge(t *testing.T, m *Machine) string {
	t.Helper()
	v := os.Getenv("USBFLASH_E2E_BENCH_TMPFS_HUGE")
	if v == "" {
		return ""
	}
	guest(t, m, "mount -o remount,huge="+v+" /tmp && grep ' /tmp ' /proc/mounts")
	return "huge=" + v
}
