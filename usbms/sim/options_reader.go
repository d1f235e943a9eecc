package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// readerOptions are the sim: options that give the reader a USB identity,
// a clock, and the misbehaviours of real readers (Misbehaviour).
type readerOptions struct {
	vid, pid, bcd uint16
	quirks        string
	virtualClock  bool
	mis           Misbehaviour
	uas           UASConfig
}

// readerOptionNames lists the options setReader knows, for the message
// naming every option.
var readerOptionNames = []string{"vid", "pid", "bcd", "quirks", "clock", "choke", "residue", "csw-signature",
	"csw-in-data", "maxlun", "ignore-lun", "sense", "not-ready", "hang", "mode-placeholder",
	"last-sector-bug", "capacity-off-by-one", "write-cache", "reset-settle", "initial-read10",
	"uas", "streams", "uas-overlap", "uas-response", "uas-abort", "uas-no-ready"}

// setReader applies one of the options above; known is false for any
// other key.
func (r *readerOptions) setReader(key, val string) (known bool, err error) {
	m := &r.mis
	switch key {
	case "vid", "pid", "bcd":
		var n uint64
		n, err = strconv.ParseUint(val, 16, 16)
		if err != nil {
			return true, fmt.Errorf("want 4 hexadecimal digits, like 0bda")
		}
		switch key {
		case "vid":
			r.vid = uint16(n)
		case "pid":
			r.pid = uint16(n)
		default:
			r.bcd = uint16(n)
		}
	case "quirks":
		r.quirks = val
	case "uas":
		r.uas.Mode, err = parseEnum[UASMode](val, uasModeNames, "only")
	case "streams":
		r.uas.Streams, err = strconv.Atoi(val)
		if err != nil || r.uas.Streams < 0 || r.uas.Streams > 0xFFFF {
			err = fmt.Errorf("want 0 (high speed: READY IUs) to 65535")
		}
	case "uas-overlap", "uas-response", "uas-no-ready":
		var n int
		n, err = strconv.Atoi(val)
		if err != nil || n < 1 {
			return true, fmt.Errorf("want the number of a command, 1 or more")
		}
		switch key {
		case "uas-overlap":
			r.uas.OverlapAt = int64(n)
		case "uas-response":
			r.uas.ResponseAt = int64(n)
		default:
			r.uas.NoReadyAt = int64(n)
		}
	case "uas-abort":
		if val != "fail" {
			err = fmt.Errorf("want fail")
		}
		r.uas.AbortFails = true
	case "clock":
		switch val {
		case "virtual":
			r.virtualClock = true
		case "real":
			r.virtualClock = false
		default:
			err = fmt.Errorf("want virtual or real")
		}
	case "choke":
		blocks, mode, _ := strings.Cut(val, ":")
		m.ChokeBlocks, err = strconv.ParseInt(blocks, 10, 64)
		if err != nil || m.ChokeBlocks < 1 {
			return true, fmt.Errorf("want BLOCKS[:hang|stall|disconnect], BLOCKS at least 1")
		}
		m.ChokeMode, err = parseEnum[ChokeMode](mode, chokeNames, "hang")
	case "residue":
		m.Residue, err = parseEnum[ResidueMode](val, residueNames, "")
	case "csw-signature":
		if len(val) != 4 {
			return true, fmt.Errorf("want 4 characters, like USBU")
		}
		m.CSWSignature = uint32(val[0]) | uint32(val[1])<<8 | uint32(val[2])<<16 | uint32(val[3])<<24
	case "csw-in-data":
		m.CSWInData, err = parseBool(val)
	case "maxlun":
		switch val {
		case "hang":
			m.MaxLUN = MaxLUNHang
		case "error":
			m.MaxLUN = MaxLUNError
		default:
			m.MaxLUN = MaxLUNReport
			m.MaxLUNValue, err = strconv.Atoi(val)
			if err != nil || m.MaxLUNValue < 0 || m.MaxLUNValue > 255 {
				return true, fmt.Errorf("want hang, error or a number from 0 to 255")
			}
		}
	case "ignore-lun":
		m.IgnoreLUN, err = parseBool(val)
	case "sense":
		mode, count, _ := strings.Cut(val, ":")
		if m.Sense, err = parseEnum[SenseMode](mode, senseModeNames, ""); err != nil {
			return true, err
		}
		m.SenseCount = 1
		if count != "" {
			m.SenseCount, err = parseCount(count)
		}
	case "not-ready":
		code, more, _ := strings.Cut(val, ":")
		hex := strings.ReplaceAll(code, ".", "")
		n, perr := strconv.ParseUint(hex, 16, 16)
		if perr != nil || len(hex) != 4 {
			return true, fmt.Errorf("want ASC.ASCQ in hexadecimal, like 04.02, then :until-start or :count=N")
		}
		m.NotReady, m.NotReadyASC, m.NotReadyASCQ = true, byte(n>>8), byte(n)
		switch {
		case more == "until-start":
			m.NotReadyUntilStart = true
		case more == "":
			m.NotReadyCount = 1
		case strings.HasPrefix(more, "count="):
			m.NotReadyCount, err = strconv.Atoi(strings.TrimPrefix(more, "count="))
			if err != nil || m.NotReadyCount < 1 {
				return true, fmt.Errorf("count: want 1 or more")
			}
		default:
			err = fmt.Errorf("want ASC.ASCQ[:until-start|:count=N]")
		}
	case "hang":
		var h []HangCommand
		if h, err = parseHang(val); err == nil {
			m.Hang = append(m.Hang, h...)
		}
	case "mode-placeholder":
		m.ModePlaceholder, err = parseBool(val)
	case "last-sector-bug":
		m.LastSectorBug, err = strconv.ParseInt(val, 10, 64)
		if err != nil || m.LastSectorBug < 1 {
			return true, fmt.Errorf("want a block count of 1 or more")
		}
	case "capacity-off-by-one":
		m.CapacityOffByOne, err = parseBool(val)
	case "write-cache":
		m.WriteCache, err = parseBool(val)
	case "initial-read10":
		m.InitialRead10, err = strconv.Atoi(val)
		if err != nil || m.InitialRead10 < 1 {
			return true, fmt.Errorf("want a count of 1 or more")
		}
	case "reset-settle":
		m.ResetSettle, err = time.ParseDuration(val)
		if err != nil || m.ResetSettle < 0 {
			return true, fmt.Errorf("want a duration of 0 or more, like 6s")
		}
	default:
		return false, nil
	}
	return true, err
}

// apply puts the options into a Config.
func (r *readerOptions) apply(cfg *Config) {
	cfg.VID, cfg.PID, cfg.BCD, cfg.Quirks = r.vid, r.pid, r.bcd, r.quirks
	cfg.VirtualClock = r.virtualClock
	cfg.Misbehaviour = r.mis
	cfg.UAS = r.uas
}

// parseEnum finds s among names (the empty name is never chosen; def is
// what "" means).
func parseEnum[T ~int](s string, names []string, def string) (T, error) {
	if s == "" {
		s = def
	}
	var want []string
	for i, n := range names {
		if n == "" || n == "N" {
			continue
		}
		if n == s {
			return T(i), nil
		}
		want = append(want, n)
	}
	return 0, fmt.Errorf("want one of %s", strings.Join(want, ", "))
}

// parseCount reads count=N (N >= 1) or count=every (0).
func parseCount(s string) (int, error) {
	v, ok := strings.CutPrefix(s, "count=")
	if !ok {
		return 0, fmt.Errorf("want :count=N or :count=every")
	}
	if v == "every" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("count: want 1 or more, or every")
	}
	return n, nil
}
