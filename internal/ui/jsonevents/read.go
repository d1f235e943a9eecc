package jsonevents

import "github.com/usbflash/usbflash/pipeline"

// The JSON events of block maps (write --bmap) and of read, beside those
// of events.go. A read has its own start and summary: it names the output
// file instead of an image, and there is no decoder to be bound by.

const (
	NameBlockMap Name = "block_map" // write uses a block map: which, and what it maps

	CommandRead Command = "read"
	PhaseRead           = Phase(pipeline.PhaseRead)
	BoundSink   Bound   = "sink" // compressing and writing the backup took longer than the card
)

// BlockMap is the first event of a write with a block map: only the
// mapped bytes are written and verified.
type BlockMap struct {
	Header
	BMap        string `json:"bmap"` // the map's path
	Ranges      int    `json:"ranges"`
	MappedBytes int64  `json:"mapped_bytes"`
	ImageSize   int64  `json:"image_size"` // what the map says
}

// ReadStart comes before the first command to the card.
type ReadStart struct {
	Header
	Command      Command `json:"command"`
	Target       string  `json:"target"` // as given on the command line
	Out          string  `json:"out"`
	Format       string  `json:"format"` // the output's compression, by its name
	TransferSize int64   `json:"transfer_size"`
	Buffers      int     `json:"buffers"`
}

// ReadSummary says what was read and written.
type ReadSummary struct {
	Header
	Command  Command `json:"command"`
	Bytes    int64   `json:"bytes"` // read from the card
	Reads    int     `json:"reads"` // READ commands
	ElapsedS float64 `json:"elapsed_s"`
	Rate     float64 `json:"rate"`
	SHA256   string  `json:"sha256"` // of the bytes read
	Out      string  `json:"out"`
	Format   string  `json:"format"`
	OutBytes int64   `json:"out_bytes"` // the output file's size
	// BMap is the block map written beside the output; MappedBytes what it
	// maps (the blocks that are not all zero).
	BMap        string  `json:"bmap"`
	MappedBytes int64   `json:"mapped_bytes"`
	Bound       Bound   `json:"bound"`
	BoundRatio  float64 `json:"bound_ratio"`
	// PartitionTable is what --used found: MBR, GPT or none; absent
	// without --used.
	PartitionTable string   `json:"partition_table,omitempty"`
	Verified       bool     `json:"verified"`                   // --verify read the card again and it matched
	VerifyElapsedS *float64 `json:"verify_elapsed_s,omitempty"` // with --verify
}
