// Package eventsdoc renders docs/events.md, the reference of usbflash's
// --json events, from events.schema.json and the prose of events.md.tmpl.
// The tables of events and fields come from the schema alone, so the
// reference cannot drift from the contract the tests hold every event to;
// cmd/usbflash's contract test renders it again and compares.
package eventsdoc

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
)

//go:embed events.md.tmpl
var prose string

// Render returns docs/events.md for the schema's bytes.
func Render(schema []byte) ([]byte, error) {
	var root node
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("events schema: %w", err)
	}
	var defs node
	if err := root.get("$defs", &defs); err != nil {
		return nil, err
	}
	d := doc{defs: defs}
	t, err := template.New("events.md").Funcs(template.FuncMap{
		"table":  d.table,
		"fields": d.fields,
	}).Parse(prose)
	if err != nil {
		return nil, fmt.Errorf("events.md.tmpl: %w", err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, nil); err != nil {
		return nil, fmt.Errorf("events.md.tmpl: %w", err)
	}
	return out.Bytes(), nil
}

// node is a JSON object that keeps its keys' order: the schema lists an
// event's fields in the order the reference should.
type node struct {
	keys []string
	vals map[string]json.RawMessage
}

func (n *node) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("not a JSON object: %.40s", b)
	}
	n.vals = map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		n.keys = append(n.keys, key)
		n.vals[key] = v
	}
	return nil
}

// get decodes key's value into v; a missing key is an error.
func (n node) get(key string, v any) error {
	raw, ok := n.vals[key]
	if !ok {
		return fmt.Errorf("events schema: no %q", key)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("events schema: %s: %w", key, err)
	}
	return nil
}

// has says whether key is there.
func (n node) has(key string) bool {
	_, ok := n.vals[key]
	return ok
}

// str is key's string value, or "" when absent or not a string.
func (n node) str(key string) string {
	var s string
	if json.Unmarshal(n.vals[key], &s) != nil {
		return ""
	}
	return s
}

type doc struct {
	defs node
}

// def is the definition of an event (or of a type it refers to).
func (d doc) def(name string) (node, error) {
	var n node
	if !d.defs.has(name) {
		return n, fmt.Errorf("events schema: no definition %q", name)
	}
	return n, d.defs.get(name, &n)
}

// event returns the definition of the event named in the schema's $defs,
// and the name its objects carry in "event".
func (d doc) event(name string) (node, string, error) {
	def, err := d.def(name)
	if err != nil {
		return def, "", err
	}
	var props, ev node
	if err := def.get("properties", &props); err != nil {
		return def, "", fmt.Errorf("%s: %w", name, err)
	}
	if err := props.get("event", &ev); err != nil {
		return def, "", fmt.Errorf("%s: %w", name, err)
	}
	var event string
	if err := ev.get("const", &event); err != nil {
		return def, "", fmt.Errorf("%s: %w", name, err)
	}
	return def, event, nil
}

// table renders the events defined by names as "| event | fields |", the
// fields being every property but event and time, in the schema's order.
func (d doc) table(names ...string) (string, error) {
	var b strings.Builder
	b.WriteString("| event | fields |\n|---|---|\n")
	for _, name := range names {
		def, event, err := d.event(name)
		if err != nil {
			return "", err
		}
		var props node
		if err := def.get("properties", &props); err != nil {
			return "", err
		}
		var fields []string
		for _, k := range props.keys {
			if k != "event" && k != "time" {
				fields = append(fields, "`"+k+"`")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", event, strings.Join(fields, ", "))
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// fields renders one event definition: a heading, its description, and a
// row per field (nested objects' fields as path.field, arrays' as
// path[].field).
func (d doc) fields(name string) (string, error) {
	def, event, err := d.event(name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#### `%s`", event)
	if name != event {
		fmt.Fprintf(&b, " (schema: `%s`)", name)
	}
	b.WriteString("\n\n")
	if s := def.str("description"); s != "" {
		b.WriteString(s + "\n\n")
	}
	// "always" is the schema's required: a field that is not is there when
	// its meaning says.
	b.WriteString("| field | type | always | meaning |\n|---|---|---|---|\n")
	if err := d.rows(&b, "", def, true); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// rows writes a row per property of obj, and the rows of its nested
// objects after each one.
func (d doc) rows(b *strings.Builder, prefix string, obj node, top bool) error {
	var props node
	if err := obj.get("properties", &props); err != nil {
		return err
	}
	var required []string
	if obj.has("required") {
		if err := obj.get("required", &required); err != nil {
			return err
		}
	}
	for _, k := range props.keys {
		if top && (k == "event" || k == "time") {
			continue
		}
		var p node
		if err := props.get(k, &p); err != nil {
			return err
		}
		typ, desc, err := d.describe(p)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		req := "no"
		for _, r := range required {
			if r == k {
				req = "yes"
			}
		}
		fmt.Fprintf(b, "| `%s%s` | %s | %s | %s |\n", prefix, k, cell(typ), req, cell(desc))
		// An object's fields, or those of an array's objects, follow it.
		inner, path := p, prefix+k
		if inner.str("type") == "array" && inner.has("items") {
			if err := inner.get("items", &inner); err != nil {
				return err
			}
			path += "[]"
		}
		if inner.has("$ref") {
			if inner, err = d.def(strings.TrimPrefix(inner.str("$ref"), "#/$defs/")); err != nil {
				return err
			}
		}
		if inner.has("properties") {
			if err := d.rows(b, path+".", inner, false); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	}
	return nil
}

// describe returns a property's type in words and its meaning: its own
// description, else that of the definition it refers to.
func (d doc) describe(p node) (typ, desc string, err error) {
	desc = p.str("description")
	switch {
	case p.has("$ref"):
		ref, err := d.def(strings.TrimPrefix(p.str("$ref"), "#/$defs/"))
		if err != nil {
			return "", "", err
		}
		t, rdesc, err := d.describe(ref)
		if desc == "" {
			desc = rdesc
		}
		return t, desc, err
	case p.has("const"):
		return "`" + string(p.vals["const"]) + "`", desc, nil
	case p.has("enum"):
		var vals []json.RawMessage
		if err := p.get("enum", &vals); err != nil {
			return "", "", err
		}
		var s []string
		for _, v := range vals {
			s = append(s, "`"+string(bytes.Trim(v, `"`))+"`")
			if string(v) == `""` {
				s[len(s)-1] = "`\"\"`"
			}
		}
		return "one of " + strings.Join(s, ", "), desc, nil
	case p.has("anyOf"):
		var alts []node
		if err := p.get("anyOf", &alts); err != nil {
			return "", "", err
		}
		var s []string
		for _, a := range alts {
			t, _, err := d.describe(a)
			if err != nil {
				return "", "", err
			}
			s = append(s, t)
		}
		return strings.Join(s, ", or "), desc, nil
	}
	typ = p.str("type")
	switch typ {
	case "integer", "number":
		for _, bound := range []struct{ key, op string }{{"minimum", " ≥ "}, {"exclusiveMinimum", " > "}} {
			if p.has(bound.key) {
				typ += bound.op + string(p.vals[bound.key])
			}
		}
	case "string":
		if f := p.str("format"); f != "" {
			typ += " (" + f + ")"
		}
		if pat := p.str("pattern"); pat != "" {
			typ += " matching `" + pat + "`"
		}
		if p.has("minLength") {
			typ += ", not empty"
		}
	case "array":
		var items node
		if err := p.get("items", &items); err != nil {
			return "", "", err
		}
		t, _, err := d.describe(items)
		if err != nil {
			return "", "", err
		}
		typ = "array of " + t
		if p.has("minItems") {
			typ += ", at least " + string(p.vals["minItems"])
		}
	case "":
		return "", "", fmt.Errorf("no type")
	}
	return typ, desc, nil
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
