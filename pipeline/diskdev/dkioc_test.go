package diskdev

import "testing"

// TestDiskIoctls makes each of macOS's disk ioctls again as xnu's
// bsd/sys/disk.h writes it (_IO and _IOR of sys/ioccom.h, group 'd') and
// holds it to the number the constant states; those numbers are the ones
// programs that call them without the header use (DKIOCGETBLOCKSIZE
// 0x40046418, DKIOCGETBLOCKCOUNT 0x40086419, DKIOCSYNCHRONIZECACHE
// 0x20006416).
func TestDiskIoctls(t *testing.T) {
	io := func(n uint32) uint32 { return ioc(iocVoid, 'd', n, 0) }
	ior := func(n, size uint32) uint32 { return ioc(iocOut, 'd', n, size) }
	for _, tt := range []struct {
		name      string
		got, want uint32
	}{
		{"DKIOCEJECT", dkiocEject, io(21)},
		{"DKIOCSYNCHRONIZECACHE", dkiocSynchronizeCache, io(22)},
		{"DKIOCGETBLOCKSIZE", dkiocGetBlockSize, ior(24, 4)},
		{"DKIOCGETBLOCKCOUNT", dkiocGetBlockCount, ior(25, 8)},
		{"DKIOCISWRITABLE", dkiocIsWritable, ior(29, 4)},
		{"DKIOCGETMAXBYTECOUNTREAD", dkiocGetMaxByteCountRead, ior(70, 8)},
		{"DKIOCGETMAXBYTECOUNTWRITE", dkiocGetMaxByteCountWrite, ior(71, 8)},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %#08x, _IO/_IOR make %#08x", tt.name, tt.got, tt.want)
		}
	}
	// The three numbers widely written out, independent of ioc.
	if dkiocGetBlockSize != 0x40046418 || dkiocGetBlockCount != 0x40086419 || dkiocSynchronizeCache != 0x20006416 {
		t.Error("a disk ioctl's number is not the header's")
	}
	// _IOW sets IOC_IN: DKIOCSETBLOCKSIZE (kernel only) is _IOW('d', 24, uint32_t).
	if got := ioc(iocIn, 'd', 24, 4); got != 0x80046418 {
		t.Errorf("_IOW('d', 24, uint32_t) = %#x", got)
	}
}
