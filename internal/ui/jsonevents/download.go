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
