package layers

import (
	"fmt"
	"sort"
	"strings"
)

// parsePolicy reads rules "a, b < c, d" separated by ";" (with "#"
// comments to the end of a line) into what each package on the right may
// import: the packages on the left and, for a group (a name in capitals),
// what the group stands for.
func parsePolicy(text string) (map[string]map[string]bool, error) {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte(' ')
	}
	allowed := map[string]map[string]bool{}
	groups := map[string]map[string]bool{}
	for _, rule := range strings.Split(b.String(), ";") {
		if strings.TrimSpace(rule) == "" {
			continue
		}
		sides := strings.Split(rule, "<")
		if len(sides) != 2 {
			return nil, fmt.Errorf("rule %q: want one <", strings.TrimSpace(rule))
		}
		lower := map[string]bool{}
		for _, name := range names(sides[0]) {
			switch {
			case name == "NONE":
			case isGroup(name):
				g, ok := groups[name]
				if !ok {
					return nil, fmt.Errorf("rule %q: group %s used before it is defined", strings.TrimSpace(rule), name)
				}
				for p := range g {
					lower[p] = true
				}
			default:
				lower[name] = true
			}
		}
		for _, name := range names(sides[1]) {
			set := allowed
			if isGroup(name) {
				set = groups
			}
			if set[name] == nil {
				set[name] = map[string]bool{}
			}
			for p := range lower {
				set[name][p] = true
			}
		}
	}
	return allowed, nil
}

func names(list string) []string {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func isGroup(name string) bool { return name == strings.ToUpper(name) && !strings.Contains(name, "/") }

// violation is one import the policy does not allow, or a package it
// does not know.
type violation struct{ pkg, imp string }

func (v violation) String() string {
	if v.imp == "" {
		return v.pkg + " has no rule"
	}
	return v.pkg + " imports " + v.imp
}

// violations holds a module's import graph against the policy. Programs
// under e2e/ and tools/ are the harness's, held elsewhere.
func violations(allowed map[string]map[string]bool, graph map[string]map[string]bool) []violation {
	var out []violation
	for pkg, imps := range graph {
		if pkg == "cmd/usbflash" || strings.HasPrefix(pkg, "e2e") || strings.HasPrefix(pkg, "tools/") {
			continue
		}
		may, ok := allowed[pkg]
		if !ok {
			out = append(out, violation{pkg: pkg})
			continue
		}
		for imp := range imps {
			if !may[imp] {
				out = append(out, violation{pkg, imp})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
