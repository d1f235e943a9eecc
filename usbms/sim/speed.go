package sim

import "time"

// commandCost is what the card itself adds to a READ or WRITE beyond the
// wire: the data time of the unused part of its last page (the card moves
// whole pages), the erase unit boundaries a READ straddles, and the erase
// units a WRITE covers only in part (the card must merge the rest of the
// unit: a read-modify-write). This is what makes a sweep find a knee, the
// alignment test find the unit, and small writes slower than large ones, as
// on real cards.
func (d *Device) commandCost(p plan) time.Duration {
	if p.lun == nil || p.n <= 0 {
		return 0
	}
	var cost time.Duration
	speed := d.wireSpeed(p.dir == dirOut)
	if page := d.cfg.Page; page > 0 && speed > 0 {
		if rest := p.n % page; rest != 0 {
			cost += time.Duration(float64(page-rest) / speed * float64(time.Second))
		}
	}
	au := d.cfg.AllocationUnit
	if au <= 0 || d.cfg.AUCost <= 0 {
		return cost
	}
	first, last := p.off/au, (p.off+p.n-1)/au // units touched
	if p.dir == dirOut {
		partial := int64(0)
		if p.off%au != 0 {
			partial++
		}
		if (p.off+p.n)%au != 0 && (last != first || p.off%au == 0) {
			partial++
		}
		return cost + time.Duration(partial)*d.cfg.AUCost
	}
	return cost + time.Duration(last-first)*d.cfg.AUCost
}

// wireSpeed is the data-phase speed in one direction: WriteSpeed for
// data-out when set, else Speed. 0 is unlimited.
func (d *Device) wireSpeed(out bool) float64 {
	if out && d.cfg.WriteSpeed > 0 {
		return d.cfg.WriteSpeed
	}
	return d.cfg.Speed
}

// addBusy charges t of device time to the wire after what is already queued.
func (d *Device) addBusy(t time.Duration) {
	if t <= 0 {
		return
	}
	d.charge(t)
	if d.cfg.VirtualClock {
		return
	}
	start := time.Now()
	if d.busyUntil.After(start) {
		start = d.busyUntil
	}
	d.busyUntil = start.Add(t)
}
