package diskdev

// macOS's disk ioctls (xnu bsd/sys/disk.h), made as sys/ioccom.h makes
// them: _IOC(inout, group, num, len) = inout | (len & IOCPARM_MASK) << 16
// | group << 8 | num. The numbers are written out, as x/sys/unix has none
// of them; dkioc_test.go makes each again from the header's arguments.
const (
	// DKIOCEJECT: _IO('d', 21).
	dkiocEject = 0x20006415
	// DKIOCSYNCHRONIZECACHE: _IO('d', 22).
	dkiocSynchronizeCache = 0x20006416
	// DKIOCGETBLOCKSIZE: _IOR('d', 24, uint32_t).
	dkiocGetBlockSize = 0x40046418
	// DKIOCGETBLOCKCOUNT: _IOR('d', 25, uint64_t).
	dkiocGetBlockCount = 0x40086419
	// DKIOCISWRITABLE: _IOR('d', 29, uint32_t).
	dkiocIsWritable = 0x4004641d
	// DKIOCGETMAXBYTECOUNTREAD: _IOR('d', 70, uint64_t).
	dkiocGetMaxByteCountRead = 0x40086446
	// DKIOCGETMAXBYTECOUNTWRITE: _IOR('d', 71, uint64_t).
	dkiocGetMaxByteCountWrite = 0x40086447
)

// sys/ioccom.h's parts of a request.
const (
	iocParmMask = 0x1fff
	iocVoid     = 0x20000000 // no parameters
	iocOut      = 0x40000000 // copy parameters out
	iocIn       = 0x80000000 // copy parameters in
)

// ioc is sys/ioccom.h's _IOC.
func ioc(inout uint32, group byte, num uint32, size uint32) uint32 {
	return inout | (size&iocParmMask)<<16 | uint32(group)<<8 | num
}
