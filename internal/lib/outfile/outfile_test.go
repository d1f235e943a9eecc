package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		path string
		want string // "" for success
	}{
		{filepath.Join(dir, "plot.svg"), ""},
		{filepath.Join(dir, "missing", "plot.svg"), "cannot create " + filepath.Join(dir, "missing", "plot.svg") + ": no such file or directory"},
	}
	for _, tt := range tests {
		err := Check(tt.path)
		var oe *Error
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%s) = %v", tt.path, err)
		case tt.want != "" && (!errors.As(err, &oe) || oe.Op != OpCreate || err.Error() != tt.want):
			t.Errorf("Check(%s) = %v, want %q", tt.path, err, tt.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Check left %d files", len(entries))
	}
}

func TestWrite(t *testing.T) {
	renderFailed := errors.New("the plot could not be drawn")
	tests := []struct {
		name  string
		write func(dir string, w io.Writer) error
		want  func(path string, err error) bool
		file  bool // the file exists after
	}{
		{"written whole", func(_ string, w io.Writer) error { _, err := io.WriteString(w, "<svg/>"); return err },
			func(_ string, err error) bool { return err == nil }, true},
		{"the writer's own failure", func(_ string, w io.Writer) error { io.WriteString(w, "<svg"); return renderFailed },
			func(_ string, err error) bool { return err == renderFailed }, false},
		{"the directory went away", func(dir string, w io.Writer) error { io.WriteString(w, "<svg/>"); return os.RemoveAll(dir) },
			func(path string, err error) bool {
				var oe *Error
				return errors.As(err, &oe) && oe.Op == OpWrite && oe.Path == path && !strings.Contains(err.Error(), ".plot.svg.")
			}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			os.Mkdir(dir, 0o755)
			path := filepath.Join(dir, "plot.svg")
			err := Write(path, func(w io.Writer) error { return tt.write(dir, w) })
			if !tt.want(path, err) {
				t.Errorf("Write = %v", err)
			}
			got, rerr := os.ReadFile(path)
			if (rerr == nil) != tt.file || (tt.file && string(got) != "<svg/>") {
				t.Errorf("the file: %q, %v", got, rerr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 1 || (len(entries) == 1 && !tt.file) {
				t.Errorf("Write left %d files", len(entries))
			}
		})
	}
}
