package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// defaultAUCost is what straddling an erase unit costs when au= is given
// without au-cost=: the order of a real card's extra page read.
const defaultAUCost = 2 * time.Millisecond

// options are the parsed settings of a sim: target.
type options struct {
	size                        int64
	block                       int
	speed                       float64
	latency                     time.Duration
	writeSpeed                  float64
	page, au                    int64
	auCost                      time.Duration
	luns                        int
	wp, nomedium, removable     bool
	serial, vendor, product     string
	revision                    string
	stallMaxLUN                 bool
	rejectSync, rejectModeSense bool
	maxTransfer                 uint32
	optimalTransfer             uint32
	unmap                       string
	faults                      []Fault
	fake                        fakeOptions      // fake=, real=, fake-cache= (fake.go)
	writeBack                   writeBackOptions // write-back=, write-back-every= (writeback.go)
	reader                      readerOptions
}

// parseSpec splits "sim:PATH?opts" and parses the options. The first "?"
// starts the options, so PATH cannot contain one.
// SpecError is a sim: target whose syntax or options are wrong: the
// simulator cannot be what it asks for.
type SpecError struct {
	Spec string
	Err  error
}

func (e *SpecError) Error() string { return fmt.Sprintf("sim: target %q: %v", e.Spec, e.Err) }
func (e *SpecError) Unwrap() error { return e.Err }

// Class is Usage: the target's options are the caller's.
func (e *SpecError) Class() failure.Class { return failure.Usage }

func parseSpec(spec string) (options, string, error) {
	rest := strings.TrimPrefix(spec, "sim:")
	path, query, _ := strings.Cut(rest, "?")
	o := options{block: 512, luns: 1, removable: true}
	if path == "" {
		return o, "", &SpecError{Spec: spec, Err: errors.New("want sim:PATH[?options], PATH being the card image file")}
	}
	if query == "" {
		return o, path, nil
	}
	for _, kv := range strings.Split(query, "&") {
		key, val, _ := strings.Cut(kv, "=")
		if err := o.set(key, val); err != nil {
			return o, "", &SpecError{Spec: spec, Err: err}
		}
	}
	if o.au > 0 && !strings.Contains("&"+query, "&au-cost=") {
		o.auCost = defaultAUCost
	}
	if err := o.fake.check(o.size, int64(o.block)); err != nil {
		return o, "", &SpecError{Spec: spec, Err: err}
	}
	if err := o.writeBack.check(int64(o.block)); err != nil {
		return o, "", &SpecError{Spec: spec, Err: err}
	}
	for _, f := range o.faults {
		if f.LUN >= o.luns {
			return o, "", &SpecError{Spec: spec, Err: fmt.Errorf("option fault=%s: lun=%d but there are %d LUNs (luns=N)", f.Kind, f.LUN, o.luns)}
		}
	}
	return o, path, nil
}

// set applies one option.
func (o *options) set(key, val string) error {
	var err error
	switch key {
	case "size":
		o.size, err = units.ParseSize(val)
		if err == nil && o.size <= 0 {
			err = fmt.Errorf("want a positive size")
		}
	case "block":
		o.block, err = strconv.Atoi(val)
		if err == nil && o.block != 512 && o.block != 4096 {
			err = fmt.Errorf("want 512 or 4096")
		}
	case "speed":
		o.speed, err = units.ParseRate(val)
	case "latency":
		o.latency, err = time.ParseDuration(val)
		if err == nil && o.latency < 0 {
			err = fmt.Errorf("want a duration of 0 or more, like 1ms")
		}
	case "write-speed":
		o.writeSpeed, err = units.ParseRate(val)
	case "page", "au":
		var n int64
		if n, err = units.ParseSize(val); err == nil && n <= 0 {
			err = fmt.Errorf("want a positive size, like 16KiB or 4MiB")
		}
		if key == "page" {
			o.page = n
		} else {
			o.au = n
		}
	case "au-cost":
		o.auCost, err = time.ParseDuration(val)
		if err == nil && o.auCost < 0 {
			err = fmt.Errorf("want a duration of 0 or more, like 2ms")
		}
	case "luns":
		o.luns, err = strconv.Atoi(val)
		if err == nil && (o.luns < 1 || o.luns > 16) {
			err = fmt.Errorf("want 1 to 16")
		}
	case "wp":
		o.wp, err = parseBool(val)
	case "nomedium":
		o.nomedium, err = parseBool(val)
	case "removable":
		o.removable, err = parseBool(val)
	case "maxlun-stall":
		o.stallMaxLUN, err = parseBool(val)
	case "reject-sync":
		o.rejectSync, err = parseBool(val)
	case "reject-modesense":
		o.rejectModeSense, err = parseBool(val)
	case "serial":
		o.serial = val
	case "vendor":
		o.vendor = val
	case "product":
		o.product = val
	case "revision":
		o.revision = val
	case "max-transfer":
		var n uint64
		n, err = strconv.ParseUint(val, 10, 32)
		o.maxTransfer = uint32(n)
		if err != nil {
			err = fmt.Errorf("want a block count from 0 to 4294967295")
		}
	case "unmap":
		switch val {
		case "unmap", "writesame", "refuse":
			o.unmap = val
		case "0", "":
		default:
			err = fmt.Errorf("want unmap, writesame or refuse")
		}
	case "optimal-transfer":
		var n uint64
		n, err = strconv.ParseUint(val, 10, 32)
		o.optimalTransfer = uint32(n)
		if err != nil {
			err = fmt.Errorf("want a block count from 0 to 4294967295")
		}
	case "fault":
		var f Fault
		if f, err = parseFault(val); err == nil {
			o.faults = append(o.faults, f)
		}
	default:
		if isFakeOption(key) {
			err = o.fake.set(key, val)
			break
		}
		if isWriteBackOption(key) {
			err = o.writeBack.set(key, val)
			break
		}
		var known bool
		if known, err = o.reader.setReader(key, val); !known {
			return fmt.Errorf("unknown option %q: known are size, block, speed, latency, write-speed, page, au, au-cost, luns, wp, nomedium, removable, serial, vendor, product, revision, maxlun-stall, reject-sync, reject-modesense, max-transfer, optimal-transfer, unmap, fault, %s, %s, %s", key, fakeOptionNames(), writeBackOptionNames, strings.Join(readerOptionNames, ", "))
		}
	}
	if err != nil {
		if ne := (*strconv.NumError)(nil); errors.As(err, &ne) {
			err = errors.New("want a whole number") // strconv's own words name Go, not the option
		}
		return fmt.Errorf("option %s=%s: %w", key, val, err)
	}
	return nil
}

// parseBool reads 1/0, true/false, yes/no, on/off.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on", "":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("want 1 or 0 (true/false, yes/no, on/off)")
}

// faultKinds lists the fault kinds by their option name, in doc order.
func faultKinds() []string {
	var names []string
	for k := StallDataOut; k.known(); k++ {
		names = append(names, k.String())
	}
	return names
}

// parseFault reads KIND[:K=V,...], e.g. "medium-error:lba=2048,count=2".
func parseFault(s string) (Fault, error) {
	kind, params, _ := strings.Cut(s, ":")
	var f Fault
	for k := StallDataOut; k.known(); k++ {
		if k.String() == kind {
			f.Kind = k
		}
	}
	if f.Kind == 0 {
		return f, fmt.Errorf("unknown fault kind %q: want one of %s", kind, strings.Join(faultKinds(), ", "))
	}
	haveLBA := false
	if params != "" {
		for _, kv := range strings.Split(params, ",") {
			key, val, _ := strings.Cut(kv, "=")
			var err error
			switch key {
			case "lun":
				f.LUN, err = strconv.Atoi(val)
				if err == nil && (f.LUN < 0 || f.LUN > 15) {
					err = fmt.Errorf("want 0 to 15")
				}
			case "count":
				f.Count, err = strconv.Atoi(val)
				if err == nil && f.Count < 1 {
					err = fmt.Errorf("want 1 or more")
				}
			case "lba":
				f.LBA, err = strconv.ParseInt(val, 10, 64)
				if err == nil && f.LBA < 0 {
					err = fmt.Errorf("want 0 or more")
				}
				haveLBA = true
			case "after":
				f.AfterBytes, err = units.ParseSize(val)
			case "persistent":
				f.Persistent, err = parseBool(val)
			default:
				return f, fmt.Errorf("fault %s: unknown parameter %q: want lun, count, lba, after or persistent", kind, key)
			}
			if err != nil {
				return f, fmt.Errorf("fault %s: parameter %s=%s: %w", kind, key, val, err)
			}
		}
	}
	if (f.Kind == MediumError || f.Kind == Corrupt) && !haveLBA {
		return f, fmt.Errorf("fault %s needs lba=N, the block it is about", f.Kind)
	}
	return f, nil
}
