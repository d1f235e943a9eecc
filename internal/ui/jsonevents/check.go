package jsonevents

// The JSON events of check, beside those of events.go: its own start and
// summary; note, phase, progress and error are the shared ones.

const CommandCheck Command = "check"

// check's phases, in its progress events.
const (
	PhaseProbe   Phase = "probe"
	PhaseCache   Phase = "cache"
	PhasePutBack Phase = "put back" // not bench's "restore": its progress counts points
)

type CheckStart struct {
	Header
	Command     Command `json:"command"`
	Target      string  `json:"target"` // the name later messages use
	Capacity    int64   `json:"capacity"`
	BlockSize   int     `json:"block_size"`
	MaxCache    int64   `json:"max_cache"`
	Destructive bool    `json:"destructive"`
}

type CheckSummary struct {
	Header
	Command      Command `json:"command"`
	Target       string  `json:"target"`
	Capacity     int64   `json:"capacity"`
	UsableSize   int64   `json:"usable_size"`
	Fake         bool    `json:"fake"`
	Kind         string  `json:"kind"`
	WrapsTo      *int64  `json:"wraps_to,omitempty"`
	Cache        int64   `json:"cache"`
	CacheChecked int64   `json:"cache_checked"`
	Written      int64   `json:"bytes_written"`
	Read         int64   `json:"bytes_read"`
	Commands     int     `json:"commands"`
	ElapsedS     float64 `json:"elapsed_s"`
	Restored     bool    `json:"restored"`
}
