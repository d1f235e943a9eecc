// Package units parses and prints the byte sizes and rates that users type:
// "64MiB", "4k", "512", "30MB/s".
package units

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

var suffixes = []struct {
	name string
	mult int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	// A bare letter means the binary unit, as dd and most disk tools read it.
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1}, {"", 1},
}

// ParseSize reads a byte count such as "512", "4k", "4KiB", "1.5GB" or
// "32MiB". Bare K/M/G/T are binary (1024-based); KB/MB/GB/TB are decimal.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	if num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional unit, like 4MiB", s)
	}
	for _, suf := range suffixes {
		if unit != suf.name {
			continue
		}
		if !strings.Contains(num, ".") {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n > (1<<63-1)/suf.mult {
				return 0, fmt.Errorf("size %q: not a whole number of bytes that fits in 63 bits", s)
			}
			return n * suf.mult, nil
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f*float64(suf.mult) >= 1<<63 {
			return 0, fmt.Errorf("size %q: not a number", s)
		}
		return int64(f * float64(suf.mult)), nil
	}
	return 0, fmt.Errorf("size %q: unknown unit %q (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s, unit)
}

// ParseRate reads a transfer rate in bytes per second such as "30MB/s",
// "40MiB/s" or "1e6"; the "/s" is optional.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	if f, err := strconv.ParseFloat(t, 64); err == nil && f >= 0 {
		return f, nil
	}
	n, err := ParseSize(t)
	if err != nil {
		return 0, fmt.Errorf("rate %q: want bytes per second, like 30MB/s: %w", s, err)
	}
	return float64(n), nil
}

// FormatSize prints n in the largest binary unit that keeps it readable:
// "512 B", "120 KiB", "1.5 GiB".
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit || m <= -unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %ciB", int64(v), "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
}

// FormatBytes prints an amount of data in decimal units, as disk and card
// sizes and USB speeds are quoted: "512 B", "1.50 MB", "33.6 MB", "3.94 GB".
// Every size of an image, a card or what was written is said this way;
// FormatSize is for the sizes a user gives in binary units (transfer
// sizes, regions).
func FormatBytes(n int64) string {
	const unit = 1000
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v, exp := float64(n)/unit, 0
	for (v >= unit || v <= -unit) && exp < 5 {
		v /= unit
		exp++
	}
	prec := 1
	if v < 10 && v > -10 {
		prec = 2
	}
	return fmt.Sprintf("%.*f %cB", prec, v, "kMGTPE"[exp])
}

// FormatBytesPair prints two amounts a message sets side by side ("image
// is A but the card holds B", "claims A but holds B") as FormatBytes
// does, unless they differ and would print the same: then both as exact
// byte counts ("33554456 bytes", "33554432 bytes"), and exact says so,
// since "33.6 MB but holds 33.6 MB" states no fact.
func FormatBytesPair(a, b int64) (sa, sb string, exact bool) {
	sa, sb = FormatBytes(a), FormatBytes(b)
	if a == b || sa != sb {
		return sa, sb, false
	}
	return fmt.Sprintf("%d bytes", a), fmt.Sprintf("%d bytes", b), true
}

// FormatRate prints bytes per second in decimal megabytes, as disk and USB
// speeds are usually quoted.
func FormatRate(bytesPerSecond float64) string {
	return fmt.Sprintf("%.1f MB/s", bytesPerSecond/1e6)
}
