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

// TestImports: the packages each rule keeps apart stay apart: directly
// (imports) or through anything (deps).
func TestImports(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	for _, tc := range []struct {
		pkg, not string
		deps     bool // through anything, not only directly
		why      string
	}{
		{"usbms/usbfs", "usbms/libusb", true, "the pure-Go backend speaks usbdev's vocabulary, not the cgo backend's"},
		{"internal/drive", "scsi", false, "the quirk table and SCSI live beside the transport (usbms)"},
		{"internal/probe/fakecheck", "internal/probe/cardbench", true, "saving and putting back regions is region's"},
		{"pipeline/fanout", "pipeline", true, "the device facts are blockdev's"},
		{"internal/probe/cardbench", "pipeline", true, "the device facts are blockdev's"},
	} {
		format := "{{join .Imports \"\\n\"}}"
		args := []string{"list", "-f", format, "./" + tc.pkg}
		if tc.deps {
			args = []string{"list", "-deps", "./" + tc.pkg}
		}
		cmd := exec.Command(goTool, args...)
		cmd.Dir = root(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if p == module+tc.not {
				t.Errorf("%s imports %s (deps %v): %s", tc.pkg, tc.not, tc.deps, tc.why)
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
