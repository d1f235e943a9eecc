package jsonevents

// NameDownload: how far the download of an image read from a URL got,
// beside the write's progress.
const NameDownload Name = "download"

// Download is the download of an image from a URL while it is written,
// with each write progress event: Bytes received of Total (-1 when
// unknown), Rate in bytes per second since it was asked for, Resumes after
// failures, and Bound, the side that sets the pace ("download" or "write").
type Download struct {
	Header
	URL     string  `json:"url"`
	Bytes   int64   `json:"bytes"`
	Total   int64   `json:"total"`
	Rate    float64 `json:"rate"`
	Resumes int     `json:"resumes"`
	Bound   string  `json:"bound"`
}

func (*Download) Name() Name { return NameDownload }

// NameChecksum: what the image is checked against, and that it matched.
const NameChecksum Name = "checksum"

// Checksum says what a write checks its image against before the first
// transfer: State "none" (nothing to check against), "checking" (From's
// sum, as it is written) or "matched" (for Target's write); SignedBy is
// the key whose good signature the sum's list carries.
type Checksum struct {
	Header
	State    string `json:"state"`
	From     string `json:"from,omitempty"`
	SignedBy string `json:"signed_by,omitempty"`
	Target   string `json:"target,omitempty"`
}

func (*Checksum) Name() Name { return NameChecksum }
