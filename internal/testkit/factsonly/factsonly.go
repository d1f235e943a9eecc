// Package factsonly holds the check behind usbflash's rule for error texts:
// a library's error states facts (what failed, on which device, at which
// LBA or offset, and why), and advice, what the user can do about it, is
// given once, by the CLI, chosen from the error's kind. Tests of every
// library run their messages through Check.
package factsonly

import (
	"regexp"
	"testing"
)

// adviceWords are phrases that tell the user what to do. They are matched
// case-insensitively, as whole words, anywhere in a message.
var adviceWords = []string{
	"run", "try", "retry", "pass --", "insert", "reinsert", "download", "sudo",
	"unplug", "replug", "reconnect", "plug it", "please",
	"install", "rebuild", "extract", "decompress", "convert it",
	"give a", "give one", "give at least", "drop size", "do not give",
	"use a", "use another", "slide", "check that", "check the",
	"raise", "close other", "unmount", "save it", "pipe `",
}

var adviceRE = func() []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(adviceWords))
	word := regexp.MustCompile(`^\w`)
	for i, w := range adviceWords {
		expr := regexp.QuoteMeta(w)
		if word.MatchString(w) {
			expr = `\b` + expr
		}
		if word.MatchString(w[len(w)-1:]) {
			expr += `\b`
		}
		res[i] = regexp.MustCompile(`(?i)` + expr)
	}
	return res
}()

// Advice returns the advice phrases found in msg, nil when it states facts
// only.
func Advice(msg string) []string {
	var found []string
	for i, re := range adviceRE {
		if re.MatchString(msg) {
			found = append(found, adviceWords[i])
		}
	}
	return found
}

// Check fails t for every message that gives advice.
func Check(t testing.TB, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if words := Advice(m); len(words) > 0 {
			t.Errorf("error text gives advice %q (a library states facts; the CLI advises):\n%s", words, m)
		}
	}
}
