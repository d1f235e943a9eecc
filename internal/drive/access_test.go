package drive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

const packageRule = `# the seat's user
ACTION!="remove", SUBSYSTEM=="usb", TAG+="uaccess"
# ACTION!="remove", SUBSYSTEM=="usb", GROUP="usbflash", MODE="0660"
`

func TestInstalledRule(t *testing.T) {
	admin, pkg := t.TempDir(), t.TempDir()
	dirs := []string{admin, filepath.Join(t.TempDir(), "absent"), pkg}
	if path, group := installedRule(dirs); path != "" || group != "" {
		t.Errorf("no rule installed: found %q, group %q", path, group)
	}
	if err := os.WriteFile(filepath.Join(pkg, RuleName), []byte(packageRule), 0o644); err != nil {
		t.Fatal(err)
	}
	if path, group := installedRule(dirs); path != filepath.Join(pkg, RuleName) || group != "" {
		t.Errorf("the package's rule: found %q, group %q; want it, no group (its group rule is commented)", path, group)
	}
	// The administrator's copy, its group variant uncommented, replaces it.
	variant := packageRule + `ACTION!="remove", SUBSYSTEM=="usb", GROUP="flashers", MODE="0660"` + "\n"
	if err := os.WriteFile(filepath.Join(admin, RuleName), []byte(variant), 0o644); err != nil {
		t.Fatal(err)
	}
	if path, group := installedRule(dirs); path != filepath.Join(admin, RuleName) || group != "flashers" {
		t.Errorf("the administrator's group variant: found %q, group %q; want it, flashers", path, group)
	}
}

// deniedReaders lists infos and refuses access to those in denied.
func deniedReaders(infos []usbdev.Info, denied map[int]bool) *Readers {
	return &Readers{
		List: func(context.Context) ([]usbdev.Info, error) { return infos, nil },
		accessFn: func(info usbdev.Info) error {
			if denied[info.Address] {
				return usbdev.NewError("opening "+info.DevNode(), info, usbdev.ErrPermission, errors.New("permission denied"))
			}
			return nil
		},
	}
}

func accessReader(addr int, serial string, supported bool) usbdev.Info {
	return usbdev.Info{Bus: 250, Address: addr, Port: []int{addr}, PortPath: fmt.Sprintf("250-%d", addr),
		VID: 0x46f4, PID: 0x0001, Serial: serial, Supported: supported, BulkIn: 0x81, BulkOut: 0x02,
		SubClass: usbdev.SubclassSCSI, Protocol: usbdev.ProtocolBOT}
}

func TestListShowsReadersItCannotOpen(t *testing.T) {
	infos := []usbdev.Info{accessReader(3, "DENIED1", true), accessReader(4, "DENIED2", true), accessReader(5, "ODD", false)}
	rs := deniedReaders(infos, map[int]bool{3: true, 4: true, 5: true})
	found, err := rs.ListReaders(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 3 {
		t.Fatalf("%d readers listed, want all 3", len(found))
	}
	for i, r := range found[:2] {
		var e *AccessError
		if !errors.As(r.Access, &e) || !errors.Is(r.Access, usbdev.ErrPermission) {
			t.Errorf("reader %d: access %v, want an *AccessError of kind ErrPermission", i, r.Access)
			continue
		}
		if e.Reader != USBName(infos[i]) || e.Node != infos[i].DevNode() {
			t.Errorf("reader %d: %q names %s at %s, want %s at %s", i, e, e.Reader, e.Node, USBName(infos[i]), infos[i].DevNode())
		}
		if r.Err != nil || r.Slots != nil {
			t.Errorf("reader %d: opened all the same (err %v, slots %v)", i, r.Err, r.Slots)
		}
	}
	if found[2].Access != nil {
		t.Errorf("an unsupported reader is not asked: access %v", found[2].Access)
	}
}

func TestCheckAccessBeforeAnythingElse(t *testing.T) {
	infos := []usbdev.Info{accessReader(3, "DENIED", true), accessReader(4, "OPEN", true)}
	for _, tc := range []struct {
		targets []string
		denied  bool
	}{
		{[]string{"usb:46f4:0001:DENIED"}, true},
		{[]string{"usb:250.3"}, true},
		{[]string{"sim:card.img", "usb:46f4:0001:DENIED"}, true},
		{[]string{"usb:46f4:0001:OPEN"}, false},
		{[]string{"usb:46f4:0001:ABSENT"}, false}, // the open says it is not attached
		{[]string{"sim:card.img", "file:card.img"}, false},
	} {
		var specs []Spec
		for _, raw := range tc.targets {
			s, err := Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, s)
		}
		err := deniedReaders(infos, map[int]bool{3: true}).CheckAccess(context.Background(), specs)
		var e *AccessError
		switch {
		case tc.denied && (!errors.As(err, &e) || failure.Of(err) != failure.Device || e.Node != "/dev/bus/usb/250/003"):
			t.Errorf("%v: %v, want an *AccessError (class Device) for /dev/bus/usb/250/003", tc.targets, err)
		case !tc.denied && err != nil:
			t.Errorf("%v: %v, want nil", tc.targets, err)
		}
	}
}
