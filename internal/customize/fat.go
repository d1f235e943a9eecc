package customize

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/diskfs/go-diskfs/backend"
	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/filesystem/fat12"
	"github.com/diskfs/go-diskfs/filesystem/fat16"
	"github.com/diskfs/go-diskfs/filesystem/fat32"

	"github.com/usbflash/usbflash/internal/failure"
)

// Volume is the bytes of a disk (an image or a card) as customisation
// reads and changes them: a block device seen through a byte view.
type Volume interface {
	io.ReaderAt
	io.WriterAt
	Size() int64
}

// ErrNotFAT is a boot partition that holds no FAT file system usbflash can
// edit.
var ErrNotFAT = errors.New("no FAT file system")

// ErrFull is a boot partition without room for the files.
var ErrFull = failure.New(failure.Refused, "the boot partition is full")

// ErrEmptyFile is an empty file of the boot partition that would have to
// be replaced: the FAT library cannot do it without losing clusters.
var ErrEmptyFile = failure.New(failure.Refused, "cannot replace an empty file of the boot partition")

// bootFS is the FAT file system of a boot partition, edited in place
// through go-diskfs (FAT12, FAT16 and FAT32, long names), never formatted.
type bootFS struct {
	fs    filesystem.FileSystem
	kind  string // FAT12, FAT16 or FAT32
	v     Volume
	start int64
	st    *storage
}

// openFAT opens the FAT file system of the partition at [start, start+size)
// of v. The FAT kind is the boot sector's (its cluster count), as the
// kernel decides it.
func openFAT(v Volume, start, size int64) (*bootFS, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w: an empty partition at byte offset %d", ErrNotFAT, start)
	}
	// go-diskfs sizes its FAT from the table's bytes, not the volume's
	// clusters: on a full volume it hands out clusters past the data area.
	// The view ends with the partition, so such a write fails instead of
	// landing in the next partition.
	st := &storage{v: v, end: start + size}
	var errs []error
	// FAT32 first: its boot sector says so (no root directory entries);
	// FAT16 and FAT12 tell themselves apart by their cluster count.
	if f, err := fat32.Read(st, size, start, 0); err == nil {
		return &bootFS{fs: f, kind: "FAT32", v: v, start: start, st: st}, nil
	} else {
		errs = append(errs, err)
	}
	if f, err := fat16.Read(st, size, start, 0); err == nil {
		return &bootFS{fs: f, kind: "FAT16", v: v, start: start, st: st}, nil
	} else {
		errs = append(errs, err)
	}
	if f, err := fat12.Read(st, size, start, 0); err == nil {
		return &bootFS{fs: f, kind: "FAT12", v: v, start: start, st: st}, nil
	} else {
		errs = append(errs, err)
	}
	return nil, &notFATError{start: start, errs: errs}
}

// notFATError is a partition none of go-diskfs's FAT readers takes. Its
// text is the fact alone; the readers' own reasons (FAT32's, FAT16's and
// FAT12's, about boot sector fields) stay in its chain, where an image's
// read error among them is still found, and out of what a person reads.
type notFATError struct {
	start int64
	errs  []error
}

func (e *notFATError) Error() string {
	return fmt.Sprintf("%s at byte offset %d", ErrNotFAT, e.start)
}
func (e *notFATError) Unwrap() []error { return append([]error{ErrNotFAT}, e.errs...) }

// label is the file system's volume label, as the root directory's label
// entry holds it (what blkid reports and cloud-init looks for).
func (b *bootFS) label() string { return strings.TrimSpace(b.fs.Label()) }

// names lists the root directory's file names.
func (b *bootFS) names() ([]string, error) {
	entries, err := b.fs.ReadDir(".")
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out, nil
}

// lookup is the name of an entry of the root directory as it is stored
// (FAT names are matched without regard to case), or "" when absent.
func (b *bootFS) lookup(name string) (string, error) {
	names, err := b.names()
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return n, nil
		}
	}
	return "", nil
}

// readFile reads a file (of the root directory, matched without regard to
// case, or a path below it); ok is false when it is absent.
func (b *bootFS) readFile(name string) ([]byte, bool, error) {
	p := strings.TrimPrefix(path.Clean("/"+name), "/")
	if path.Dir(p) == "." {
		stored, err := b.lookup(p)
		if err != nil || stored == "" {
			return nil, false, err
		}
		p = stored
	}
	fi, err := b.fs.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case fi.Size() == 0:
		return nil, true, nil // go-diskfs cannot open an empty file for reading (its #419)
	}
	f, err := b.fs.OpenFile(p, os.O_RDONLY)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	// One read of the whole file: go-diskfs's File.Read (v1.9.4) reads a
	// cluster's rest past the file's end when a read starts inside a
	// cluster, which io.ReadAll's growing reads do (a 600-byte
	// cmdline.txt read back with zeros after it).
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, true, err
	}
	return data, true, nil
}

// writeFile replaces (or creates) a file of the boot partition with data.
// A replaced file is removed first, so its clusters are freed whatever
// its old length, and the new one gets a fresh chain.
func (b *bootFS) writeFile(name string, data []byte) error {
	// go-diskfs names files as io/fs does: relative to the root.
	p := strings.TrimPrefix(path.Clean("/"+name), "/")
	if dir := path.Dir(p); dir != "." {
		if _, err := b.fs.Stat(dir); err != nil {
			if err := b.fs.Mkdir(dir); err != nil {
				return fmt.Errorf("making directory %s: %w", dir, err)
			}
			if err := b.fixDotDot(dir); err != nil {
				return err
			}
		}
	}
	if err := b.replaceable(p); err != nil {
		return err
	}
	if stored, err := b.lookup(p); err == nil && stored != "" {
		p = stored
	}
	f, err := b.fs.OpenFile(p, os.O_CREATE|os.O_RDWR|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("creating %s: %w", p, err)
	}
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			if b.st.past {
				return fmt.Errorf("writing %s: %w", p, ErrFull) // go-diskfs keeps only the text of its cause
			}
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return f.Close()
}

// replaceable refuses an empty file where name is to be written:
// go-diskfs gives an empty file's new clusters no place in its directory
// entry (the file reads back empty, its clusters lost), and cannot remove
// a file of a FAT32 root directory to make it anew.
func (b *bootFS) replaceable(name string) error {
	p := strings.TrimPrefix(path.Clean("/"+name), "/")
	if path.Dir(p) == "." {
		stored, err := b.lookup(p)
		if err != nil || stored == "" {
			return err
		}
		p = stored
	}
	if fi, err := b.fs.Stat(p); err == nil && fi.Size() == 0 && !fi.IsDir() {
		return fmt.Errorf("%w: %s", ErrEmptyFile, p)
	}
	return nil
}

// storage is a Volume as go-diskfs's backend: its reads and writes go to
// the volume, and nothing of the operating system is used.
type storage struct {
	past bool // a write past the end was refused
	v    Volume
	end  int64 // the partition's end: nothing at or past it is written
	pos  int64
}

var _ backend.Storage = (*storage)(nil)

func (s *storage) Stat() (fs.FileInfo, error) { return volumeInfo{size: s.v.Size()}, nil }
func (s *storage) Read(p []byte) (int, error) {
	n, err := s.ReadAt(p, s.pos)
	s.pos += int64(n)
	return n, err
}
func (s *storage) Close() error { return nil }
func (s *storage) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.v.Size() {
		return 0, io.EOF
	}
	if rest := s.v.Size() - off; int64(len(p)) > rest {
		n, err := s.v.ReadAt(p[:rest], off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return s.v.ReadAt(p, off)
}
func (s *storage) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > s.end {
		s.past = true
		return 0, fmt.Errorf("%w: a write of %d bytes at byte offset %d, past the partition's end at %d", ErrFull, len(p), off, s.end)
	}
	return s.v.WriteAt(p, off)
}
func (s *storage) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += s.pos
	case io.SeekEnd:
		off += s.v.Size()
	default:
		return s.pos, fmt.Errorf("seek whence %d", whence)
	}
	if off < 0 {
		return s.pos, fmt.Errorf("seek to %d", off)
	}
	s.pos = off
	return off, nil
}
func (s *storage) Sys() (*os.File, error)                  { return nil, backend.ErrNotSuitable }
func (s *storage) Writable() (backend.WritableFile, error) { return s, nil }
func (s *storage) Path() string                            { return "" }

type volumeInfo struct{ size int64 }

func (i volumeInfo) Name() string       { return "volume" }
func (i volumeInfo) Size() int64        { return i.size }
func (i volumeInfo) Mode() fs.FileMode  { return 0o600 }
func (i volumeInfo) ModTime() time.Time { return time.Time{} }
func (i volumeInfo) IsDir() bool        { return false }
func (i volumeInfo) Sys() any           { return nil }

// finish brings what go-diskfs leaves stale up to date: a FAT32 volume's
// FSInfo sector keeps the count of free clusters, which go-diskfs does not
// recount (fsck.fat reports it wrong and Windows trusts it), so it is
// counted from the FAT as it is now.
func (b *bootFS) finish() error {
	if b.kind != "FAT32" {
		return nil
	}
	boot := make([]byte, 512)
	if _, err := b.v.ReadAt(boot, b.start); err != nil {
		return fmt.Errorf("reading the FAT32 boot sector: %w", err)
	}
	le16 := func(o int) int64 { return int64(binary.LittleEndian.Uint16(boot[o:])) }
	le32 := func(o int) int64 { return int64(binary.LittleEndian.Uint32(boot[o:])) }
	sectorSize, perCluster, reserved, fats := le16(11), int64(boot[13]), le16(14), int64(boot[16])
	total, fatSectors, infoSector := le32(32), le32(36), le16(48)
	if sectorSize == 0 || perCluster == 0 || infoSector == 0 || infoSector == 0xFFFF {
		return nil // no FSInfo sector to keep
	}
	clusters := (total - reserved - fats*fatSectors) / perCluster
	table := make([]byte, fatSectors*sectorSize)
	if _, err := b.v.ReadAt(table, b.start+reserved*sectorSize); err != nil {
		return fmt.Errorf("reading the FAT: %w", err)
	}
	var free, next int64 = 0, -1
	for c := int64(2); c < clusters+2 && 4*c+4 <= int64(len(table)); c++ {
		if binary.LittleEndian.Uint32(table[4*c:])&0x0FFFFFFF == 0 {
			free++
			if next < 0 {
				next = c
			}
		}
	}
	info := make([]byte, 512)
	off := b.start + infoSector*sectorSize
	if _, err := b.v.ReadAt(info, off); err != nil {
		return fmt.Errorf("reading the FSInfo sector: %w", err)
	}
	if string(info[:4]) != "RRaA" || string(info[484:488]) != "rrAa" {
		return nil // not an FSInfo sector: nothing there to keep right
	}
	binary.LittleEndian.PutUint32(info[488:], uint32(free))
	if next < 0 {
		next = 0xFFFFFFFF
	}
	binary.LittleEndian.PutUint32(info[492:], uint32(next))
	if _, err := b.v.WriteAt(info, off); err != nil {
		return fmt.Errorf("writing the FSInfo sector: %w", err)
	}
	return nil
}

// fixDotDot points the ".." entry of dir, made by go-diskfs, at cluster 0
// when its parent is a FAT32 root directory: go-diskfs writes the root's
// cluster there, which fsck.fat repairs and the FAT specification forbids.
func (b *bootFS) fixDotDot(dir string) error {
	if b.kind != "FAT32" || path.Dir(dir) != "." {
		return nil
	}
	f, err := b.fs.OpenFile(dir, os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("opening directory %s: %w", dir, err)
	}
	defer f.Close()
	ff, ok := f.(*fat12.File)
	if !ok {
		return nil
	}
	chain, err := ff.GetClusterChain()
	if err != nil || len(chain) == 0 {
		return fmt.Errorf("directory %s: its clusters: %w", dir, err)
	}
	base := b.fs.(*fat32.FileSystem).FileSystem
	entry := make([]byte, 32)
	off := b.start + int64(base.DataStart()) + int64(chain[0]-2)*int64(base.BytesPerCluster()) + 32
	if _, err := b.v.ReadAt(entry, off); err != nil {
		return err
	}
	if string(entry[:11]) != "..         " {
		return nil
	}
	clear(entry[20:22])
	clear(entry[26:28])
	_, err = b.v.WriteAt(entry, off)
	return err
}
