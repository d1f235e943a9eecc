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

// CostMeter measures what a phase costs: the process's Usage and the
// device's IOCounts between MeterCost and End. The engine measures each
// write and read-back with one; a probe that drives a device itself (a
// benchmark's points) measures its own the same way.
type CostMeter struct {
	dev   blockdev.IOCounter // nil when the device does not count
	usage Usage
	io    blockdev.IOCounts
}

// MeterCost begins measuring a phase on dev.
func MeterCost(dev blockdev.Device) CostMeter {
	m := CostMeter{usage: processUsage()}
	if c, ok := dev.(blockdev.IOCounter); ok {
		m.dev, m.io = c, c.IOCounts()
	}
	return m
}

// End is the usage and the device's counts since MeterCost; the counts
// are zero for a device that does not count.
func (m CostMeter) End() (Usage, blockdev.IOCounts) {
	u := processUsage().Sub(m.usage)
	if m.dev == nil {
		return u, blockdev.IOCounts{}
	}
	return u, m.dev.IOCounts().Sub(m.io)
}
