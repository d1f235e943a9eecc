package pipeline

import (
	"time"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// Usage is what the process used over a write or a read-back, as the OS
// counts it for every thread (getrusage; zero where the OS does not say):
// CPU time, the times a thread gave up its CPU to wait (voluntary context
// switches: each wake-up for a transfer, a lock, a timer) or was made to
// (involuntary), and page faults (the mapped image's pages: minor when
// the page was in memory). These, with the device's own IOCounts, are a
// write's cost in units that carry to another host of the same kind,
// which an emulator's seconds do not.
type Usage struct {
	User, System                           time.Duration
	VoluntarySwitches, InvoluntarySwitches int64
	MinorFaults, MajorFaults               int64
}

// CPU is the user and system time together.
func (u Usage) CPU() time.Duration { return u.User + u.System }

// Switches are the context switches, voluntary and involuntary.
func (u Usage) Switches() int64 { return u.VoluntarySwitches + u.InvoluntarySwitches }

// Sub is u less o: the usage between two readings.
func (u Usage) Sub(o Usage) Usage {
	return Usage{User: u.User - o.User, System: u.System - o.System,
		VoluntarySwitches: u.VoluntarySwitches - o.VoluntarySwitches, InvoluntarySwitches: u.InvoluntarySwitches - o.InvoluntarySwitches,
		MinorFaults: u.MinorFaults - o.MinorFaults, MajorFaults: u.MajorFaults - o.MajorFaults}
}

// costMeter reads the process's usage and the device's counts at the
// start of a phase, and what the phase cost at its end.
type costMeter struct {
	dev   blockdev.IOCounter // nil when the device does not count
	usage Usage
	io    blockdev.IOCounts
}

// startCost begins measuring a phase on dev.
func startCost(dev blockdev.Device) costMeter {
	m := costMeter{usage: processUsage()}
	if c, ok := dev.(blockdev.IOCounter); ok {
		m.dev, m.io = c, c.IOCounts()
	}
	return m
}

// end is the usage and the device's counts since startCost; the counts
// are zero for a device that does not count.
func (m costMeter) end() (Usage, blockdev.IOCounts) {
	u := processUsage().Sub(m.usage)
	if m.dev == nil {
		return u, blockdev.IOCounts{}
	}
	return u, m.dev.IOCounts().Sub(m.io)
}
