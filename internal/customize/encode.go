package customize

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

// One way to write a value per language the generated files are in, so
// that no value is ever pasted into a text: the shell's single quotes,
// a YAML encoder, a TOML encoder. The encoded files are decoded again
// before they are written and compared with what was meant: a file its
// reader would take differently (or not at all) is never written.

// shellQuote is v as one word of POSIX sh: in single quotes, inside which
// nothing is special, each single quote of v closed, escaped and
// reopened.
func shellQuote(v string) string { return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'" }

// ErrEncoding is a generated file that does not decode to what it was
// made from: a bug, never written.
var ErrEncoding = errors.New("a generated file does not read back as what it was made from")

// encodeYAML is doc (a struct whose fields are in the file's order) as
// YAML, checked: decoded again by the same parser, it is doc.
func encodeYAML(doc any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncoding, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncoding, err)
	}
	back := reflect.New(reflect.TypeOf(doc))
	dec := yaml.NewDecoder(bytes.NewReader(b.Bytes()))
	dec.KnownFields(true)
	if err := dec.Decode(back.Interface()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncoding, err)
	}
	if !reflect.DeepEqual(back.Elem().Interface(), doc) {
		return nil, fmt.Errorf("%w (YAML)", ErrEncoding)
	}
	return b.Bytes(), nil
}

// encodeTOML is doc as TOML, checked as encodeYAML checks YAML.
func encodeTOML(doc any) ([]byte, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncoding, err)
	}
	back := reflect.New(reflect.TypeOf(doc))
	md, err := toml.NewDecoder(bytes.NewReader(b.Bytes())).Decode(back.Interface())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncoding, err)
	}
	if len(md.Undecoded()) > 0 || !reflect.DeepEqual(back.Elem().Interface(), doc) {
		return nil, fmt.Errorf("%w (TOML)", ErrEncoding)
	}
	return b.Bytes(), nil
}

// userDataHeaders are how cloud-init tells its user-data formats apart
// (cloudinit/handlers: the first line's start), besides gzip's magic.
var userDataHeaders = []string{"#cloud-config\n", "#cloud-config\r\n", "#!", "#include", "#cloud-boothook", "#part-handler",
	"## template: jinja", "#cloud-config-archive", "Content-Type:", "\x1f\x8b"}

// checkUserData refuses a user-data file cloud-init would not take: one
// of none of its formats, or cloud-config that is not a YAML mapping.
func checkUserData(data []byte) error {
	text := string(data)
	known := false
	for _, h := range userDataHeaders {
		known = known || strings.HasPrefix(text, h)
	}
	if !known {
		return errors.New("it begins with none of cloud-init's user-data headers (#cloud-config, #!, #include, #cloud-boothook, #part-handler, ## template: jinja, Content-Type:)")
	}
	if strings.HasPrefix(text, "#cloud-config\n") || strings.HasPrefix(text, "#cloud-config\r\n") {
		return checkYAMLMapping(data)
	}
	return nil
}

// checkYAMLMapping refuses a text that is not one YAML mapping (or
// empty), as cloud-init's cloud-config and network-config are.
func checkYAMLMapping(data []byte) error {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("it is not YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if _, ok := doc.(map[string]any); !ok && doc != nil {
		return fmt.Errorf("its YAML is a %T, not a mapping of keys", doc)
	}
	return nil
}

// checkFile refuses a user's own cloud-init file (key names it in the
// settings) that check says cloud-init would not take.
func checkFile(key, path string, check func([]byte) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := check(data); err != nil {
		return fmt.Errorf("%s %s: %w", key, path, err)
	}
	return nil
}
