package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/usbflash/usbflash/"

// root is the module's directory, two up from this package's.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// configs are the builds whose imports the policy holds: Linux's default
// (usbfs), the libusb backend (cgo), libusb loaded at run time (libusbdl),
// no USB, and the other systems (whose USB is libusbdl's).
var configs = []struct {
	name string
	env  []string
	tags string
}{
	{"linux usbfs", []string{"CGO_ENABLED=0"}, "e2e"},
	{"linux libusb", []string{"CGO_ENABLED=1"}, "e2e libusb"},
	{"nousb", []string{"CGO_ENABLED=0"}, "nousb"},
	{"linux libusbdl", []string{"CGO_ENABLED=0"}, "e2e libusbdl"},
	{"windows", []string{"GOOS=windows", "CGO_ENABLED=0"}, "nousb"},
	{"windows libusbdl", []string{"GOOS=windows", "CGO_ENABLED=0"}, ""},
	{"darwin", []string{"GOOS=darwin", "CGO_ENABLED=0"}, ""},
}

// graph is the module's packages (relative to the module) and their
// direct imports of the module, over every build in configs.
func graph(t *testing.T) map[string]map[string]bool {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	g := map[string]map[string]bool{}
	for _, c := range configs {
		cmd := exec.Command(goTool, "list", "-e", "-tags", c.tags, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
		cmd.Dir = root(t)
		cmd.Env = append(os.Environ(), c.env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (%s): %v", c.name, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			pkg := strings.TrimPrefix(fields[0], module)
			if g[pkg] == nil {
				g[pkg] = map[string]bool{}
			}
			for _, imp := range fields[1:] {
				if strings.HasPrefix(imp, module) {
					g[pkg][strings.TrimPrefix(imp, module)] = true
				}
			}
		}
	}
	return g
}

// TestPolicy: every package's imports of the module are the ones policy
// allows it.
func TestPolicy(t *testing.T) {
	t.Parallel()
	allowed, err := parsePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range violations(allowed, graph(t)) {
		t.Error(v)
	}
}

// TestPolicyCatchesNewArrows: the check itself fails on an upward import
// (the engine importing a session), an import between two packages of one
// layer that the table does not name, and a package with no rule.
func TestPolicyCatchesNewArrows(t *testing.T) {
	t.Parallel()
	allowed, err := parsePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pkg, imp string
		want     string
	}{
		{"pipeline", "internal/session", "pipeline imports internal/session"},
		{"usbms/usbfs", "usbms/libusb", "usbms/usbfs imports usbms/libusb"},
		{"internal/probe/fakecheck", "internal/probe/cardbench", "internal/probe/fakecheck imports internal/probe/cardbench"},
		{"internal/drive", "scsi", "internal/drive imports scsi"},
		{"internal/newpkg", "internal/failure", "internal/newpkg has no rule"},
	} {
		g := map[string]map[string]bool{tc.pkg: {tc.imp: true}}
		vs := violations(allowed, g)
		if len(vs) != 1 || vs[0].String() != tc.want {
			t.Errorf("%s -> %s: violations %v, want [%s]", tc.pkg, tc.imp, vs, tc.want)
		}
	}
}

// TestTestkitOnlyInTests: internal/testkit is for tests; and nothing
// imports the command.
func TestTestkitOnlyInTests(t *testing.T) {
	t.Parallel()
	for pkg, imps := range graph(t) {
		if strings.HasPrefix(pkg, "internal/testkit/") || strings.HasPrefix(pkg, "e2e") {
			continue
		}
		for imp := range imps {
			if strings.HasPrefix(imp, "internal/testkit/") || strings.HasPrefix(imp, "cmd/") {
				t.Errorf("%s imports %s outside its tests", pkg, imp)
			}
		}
	}
}

// flagDef is a flag defined on a cobra command: the flag set's method, the
// variable, and the name.
var flagDef = regexp.MustCompile(`\.(?:String|Bool|Int|Int64|Uint64|Float64|Duration|StringSlice|StringArray|Var)(?:Var)?P?\([^"\n]*"([a-z][a-z0-9-]+)"`)

// TestLibrariesNameNoFlag: no string in a library (every package but the
// command, the e2e suite, tests and their helpers) names one of usbflash's flags: a
// library says which setting was at fault as data (failure.SettingError),
// and the command names the flag. Other programs' options (git's,
// losetup's) are theirs.
func TestLibrariesNameNoFlag(t *testing.T) {
	t.Parallel()
	dir := root(t)
	flags := map[string]bool{}
	cmdFiles, err := filepath.Glob(filepath.Join(dir, "cmd", "usbflash", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cmdFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range flagDef.FindAllSubmatch(src, -1) {
			flags[string(m[1])] = true
		}
	}
	for _, f := range []string{"json", "force", "sha256-keyring", "no-sha256", "transfer-size", "sizes", "region"} {
		if !flags[f] {
			t.Fatalf("--%s not found among cmd/usbflash's flags (%d found): the pattern no longer reads them", f, len(flags))
		}
	}
	named := regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	fset := token.NewFileSet()
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			switch rel {
			case "cmd", "e2e", "docs", "testdata":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			// internal/testkit holds the tests' own helpers (they drive gpg,
			// losetup, ...), read like _test.go files, never by a user.
			if rel == filepath.Join("internal", "testkit") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			for _, m := range named.FindAllStringSubmatch(lit.Value, -1) {
				if flags[m[1]] {
					t.Errorf("%s: %s names usbflash's flag --%s", fset.Position(lit.Pos()), lit.Value, m[1])
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPublicLibrariesHaveExamples: every package outside internal/, cmd/,
// e2e/ and tools/ is a library an importer may use, and shows how in an
// Example function of its tests (which go test runs against its Output).
func TestPublicLibrariesHaveExamples(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-f", "{{.ImportPath}} {{.Dir}}", "./...")
	cmd.Dir = root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	example := regexp.MustCompile(`(?m)^func Example\w*\(\) \{`)
	libraries := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, dir, _ := strings.Cut(line, " ")
		rel := strings.TrimPrefix(pkg, module)
		top, _, _ := strings.Cut(rel, "/")
		switch top {
		case "internal", "cmd", "e2e", "tools":
			continue
		}
		libraries++
		tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range tests {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			found = found || example.Match(src)
		}
		if !found {
			t.Errorf("%s is a public library with no Example in its tests", rel)
		}
	}
	if libraries < 3 {
		t.Fatalf("%d public libraries found: the listing no longer finds usbms, scsi and pipeline", libraries)
	}
}

// TestBinaryInits: the usbflash binary links no package whose init is
// costly. Go runs every linked package's init at every start of the
// binary, whatever the command, and a slow host pays for it on `usbflash
// version` as on a write. These packages did much at init (gonum/plot's
// output formats and text engine: encoding/gob for the PDF writer, the
// LaTeX symbol tables, the Liberation fonts) for one option of one
// command; the plot is drawn with chartdraw, whose fonts are read when a
// plot is drawn.
func TestBinaryInits(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	costly := []string{"encoding/gob", "gonum.org/v1/plot", "codeberg.org/go-latex/", "codeberg.org/go-pdf/", "codeberg.org/go-fonts/"}
	for _, tags := range []string{"", "nousb"} {
		cmd := exec.Command(goTool, "list", "-deps", "-tags", tags, "./cmd/usbflash")
		cmd.Dir = root(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			for _, c := range costly {
				if pkg == c || strings.HasPrefix(pkg, c+"/") || strings.HasSuffix(c, "/") && strings.HasPrefix(pkg, c) {
					t.Errorf("usbflash (tags %q) links %s, whose init runs at every start", tags, pkg)
				}
			}
		}
	}
}
