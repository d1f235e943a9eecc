package diskutil

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseInfo(t *testing.T) {
	tests := []struct {
		file string
		want Info
	}{
		{"info_disk4.plist", Info{DeviceIdentifier: "disk4", DeviceNode: "/dev/disk4", ParentWholeDisk: "disk4", WholeDisk: true,
			RemovableMedia: true, Ejectable: true, BusProtocol: "USB", MediaName: "Generic- SD/MMC", IORegistryEntryName: "Generic- SD/MMC Media",
			VirtualOrPhysical: "Physical", Size: 31914983424, TotalSize: 31914983424, DeviceBlockSize: 512, WritableMedia: true}},
		{"info_disk4s1.plist", Info{DeviceIdentifier: "disk4s1", DeviceNode: "/dev/disk4s1", ParentWholeDisk: "disk4",
			RemovableMedia: true, Ejectable: true, BusProtocol: "USB", IORegistryEntryName: "bootfs", VirtualOrPhysical: "Physical",
			MountPoint: "/Volumes/bootfs", VolumeName: "bootfs", Size: 536870912, TotalSize: 536870912, DeviceBlockSize: 512, WritableMedia: true}},
		{"info_disk0.plist", Info{DeviceIdentifier: "disk0", DeviceNode: "/dev/disk0", ParentWholeDisk: "disk0", WholeDisk: true, Internal: true,
			BusProtocol: "Apple Fabric", MediaName: "APPLE SSD AP0512Z", IORegistryEntryName: "APPLE SSD AP0512Z Media", VirtualOrPhysical: "Physical",
			Size: 500277790720, TotalSize: 500277790720, DeviceBlockSize: 4096, WritableMedia: true, OSInternalMedia: true}},
		{"info_disk5.plist", Info{DeviceIdentifier: "disk5", DeviceNode: "/dev/disk5", ParentWholeDisk: "disk5", WholeDisk: true, Internal: true,
			RemovableMedia: true, Ejectable: true, BusProtocol: "Secure Digital", MediaName: "SDXC Reader", IORegistryEntryName: "SDXC Reader Media",
			VirtualOrPhysical: "Physical", Size: 15931539456, TotalSize: 15931539456, DeviceBlockSize: 512, WritableMedia: true}},
		{"info_root.plist", Info{DeviceIdentifier: "disk3s1s1", DeviceNode: "/dev/disk3s1s1", ParentWholeDisk: "disk3", Internal: true,
			BusProtocol: "Apple Fabric", IORegistryEntryName: "com.apple.os.update-1F2E3D4C", VirtualOrPhysical: "Virtual", MountPoint: "/",
			VolumeName: "Macintosh HD", Size: 494384795648, TotalSize: 494384795648, DeviceBlockSize: 4096, WritableMedia: true, OSInternalMedia: true,
			APFSPhysicalStores: []Store{{APFSPhysicalStore: "disk0s2"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseInfo(readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseInfo =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseBadOutput(t *testing.T) {
	for _, in := range []string{
		"",
		"Could not find disk: disk9\n",
		`<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>Size</key><integer>1</integer></dict></plist>`,
		`<plist version="1.0"><dict><key>DeviceIdentifier</key><string>disk4</str`,
	} {
		if _, err := ParseInfo([]byte(in)); err == nil {
			t.Errorf("ParseInfo(%q) = nil error", in)
		}
	}
	if _, err := ParseList([]byte("Unable to run because unable to use the DiskManagement framework.\n")); err == nil {
		t.Error("ParseList of a message: nil error")
	}
}

func TestParseList(t *testing.T) {
	l, err := ParseList(readTestdata(t, "list_physical.plist"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"disk0", "disk4", "disk5"}; !reflect.DeepEqual(l.WholeDisks, want) {
		t.Errorf("WholeDisks = %v, want %v", l.WholeDisks, want)
	}
	if len(l.AllDisksAndPartitions) != 3 {
		t.Fatalf("%d disks, want 3", len(l.AllDisksAndPartitions))
	}
	card := l.AllDisksAndPartitions[1]
	if card.DeviceIdentifier != "disk4" || card.Size != 31914983424 || card.Content != "FDisk_partition_scheme" || len(card.Partitions) != 2 {
		t.Errorf("disk4 = %+v", card)
	}
	if p := card.Partitions[0]; p.DeviceIdentifier != "disk4s1" || p.MountPoint != "/Volumes/bootfs" || p.VolumeName != "bootfs" || p.Size != 536870912 {
		t.Errorf("disk4s1 = %+v", p)
	}
}

func TestMounted(t *testing.T) {
	l, err := ParseList(readTestdata(t, "list_all.plist"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		disk string
		want []string
	}{
		{"disk4", []string{"disk4s1 /Volumes/bootfs"}},
		{"disk5", []string{"disk5s1 /Volumes/NO NAME"}},
		// The external SSD's volume lives on the synthesized disk7,
		// whose store is disk6s2.
		{"disk6", []string{"disk7s1 /Volumes/Backup"}},
		// The system's snapshot is mounted as a snapshot, the Data and
		// VM volumes as volumes, on the container whose store is disk0s2.
		{"disk0", []string{"disk3s5 /System/Volumes/Data", "disk3s6 /System/Volumes/VM"}},
		{"disk9", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range l.Mounted(tt.disk) {
			got = append(got, p.DeviceIdentifier+" "+p.MountPoint)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Mounted(%s) = %q, want %q", tt.disk, got, tt.want)
		}
	}
}

func TestBootDisks(t *testing.T) {
	root, err := ParseInfo(readTestdata(t, "info_root.plist"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := BootDisks(root), []string{"disk3", "disk0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("BootDisks = %v, want %v", got, want)
	}
	// An Intel Mac's HFS+ system: "/" on a partition of disk0.
	if got, want := BootDisks(Info{DeviceIdentifier: "disk0s2", ParentWholeDisk: "disk0"}), []string{"disk0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("BootDisks(HFS+) = %v, want %v", got, want)
	}
}

func TestWholeDiskOf(t *testing.T) {
	for in, want := range map[string]string{
		"disk4": "disk4", "disk4s2": "disk4", "disk3s1s1": "disk3", "/dev/disk4": "disk4", "/dev/rdisk12s1": "disk12",
		"": "", "sda": "", "disk": "", "/dev/rdisk4x": "",
	} {
		if got := WholeDiskOf(in); got != want {
			t.Errorf("WholeDiskOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// fakeDiskutil answers as diskutil would, from testdata, and records the
// arguments it was run with.
type fakeDiskutil struct {
	calls   [][]string
	answers map[string]string // the arguments joined by spaces -> a testdata file
	fail    map[string]string // -> what it prints before failing
}

func (f *fakeDiskutil) run(_ context.Context, args ...string) ([]byte, error) {
	f.calls = append(f.calls, args)
	key := strings.Join(args, " ")
	if out, ok := f.fail[key]; ok {
		return []byte(out), &CommandError{Args: args, Output: "", Err: errors.New("exit status 1")}
	}
	file, ok := f.answers[key]
	if !ok {
		return nil, &CommandError{Args: args, Output: "Could not find disk", Err: errors.New("exit status 1")}
	}
	return os.ReadFile(filepath.Join("testdata", file))
}

func TestUnmountDisk(t *testing.T) {
	ok, err := os.ReadFile("testdata/unmount_ok.txt")
	if err != nil {
		t.Fatal(err)
	}
	dissent, err := os.ReadFile("testdata/unmount_dissent.txt")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDiskutil{answers: map[string]string{"unmountDisk disk4": "unmount_ok.txt", "unmountDisk force disk5": "unmount_ok.txt"},
		fail: map[string]string{"unmountDisk disk5": string(dissent)}}
	if err := UnmountDisk(context.Background(), f.run, "disk4", false); err != nil {
		t.Errorf("unmount that %q: %v", ok, err)
	}
	err = UnmountDisk(context.Background(), f.run, "disk5", false)
	var ue *UnmountError
	if !errors.As(err, &ue) {
		t.Fatalf("dissented unmount: %v, want an *UnmountError", err)
	}
	want := []Dissenter{{Volume: "disk4s1", PID: 512, Path: "/System/Library/Frameworks/CoreServices.framework/Frameworks/Metadata.framework/Versions/A/Support/mds_stores"}}
	if !reflect.DeepEqual(ue.Dissenters, want) {
		t.Errorf("Dissenters = %+v, want %+v", ue.Dissenters, want)
	}
	if !strings.Contains(err.Error(), "disk4s1 held by PID 512 (") {
		t.Errorf("error %q does not name the dissenter", err)
	}
	if err := UnmountDisk(context.Background(), f.run, "disk5", true); err != nil {
		t.Errorf("forced unmount: %v", err)
	}
	if got := f.calls[len(f.calls)-1]; !reflect.DeepEqual(got, []string{"unmountDisk", "force", "disk5"}) {
		t.Errorf("forced unmount ran diskutil %q", got)
	}
}

func TestInfoOfAndPhysical(t *testing.T) {
	f := &fakeDiskutil{answers: map[string]string{"info -plist /dev/disk4": "info_disk4.plist", "list -plist physical": "list_physical.plist"}}
	i, err := InfoOf(context.Background(), f.run, "/dev/disk4")
	if err != nil || i.DeviceIdentifier != "disk4" {
		t.Errorf("InfoOf = %+v, %v", i, err)
	}
	l, err := Physical(context.Background(), f.run)
	if err != nil || len(l.WholeDisks) != 3 {
		t.Errorf("Physical = %+v, %v", l, err)
	}
	if _, err := InfoOf(context.Background(), f.run, "disk9"); err == nil || !strings.Contains(err.Error(), "Could not find disk") {
		t.Errorf("InfoOf(disk9) = %v, want diskutil's own words", err)
	}
}
