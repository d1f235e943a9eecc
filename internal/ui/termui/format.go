package termui

import (
	"fmt"
	"time"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/pipeline"
)

// ImageSize is an image's size as a person reads it: exact, about, or
// unknown until decoded.
func ImageSize(src *image.Source) string {
	switch {
	case src.Size < 0:
		return "size unknown until decoded"
	case !src.SizeExact:
		return "about " + units.FormatBytes(src.Size)
	}
	return units.FormatBytes(src.Size)
}

// PerGiB is CPU seconds per GiB of image.
func PerGiB(cpu time.Duration, bytes int64) float64 {
	if bytes <= 0 {
		return 0
	}
	return cpu.Seconds() / (float64(bytes) / (1 << 30))
}

// CPULine says what the command cost the host and what memory it sent from.
func CPULine(cpu time.Duration, bytes int64, memory string) string {
	return fmt.Sprintf("CPU: %.2f s (%.2f s per GiB), buffers in %s memory", cpu.Seconds(), PerGiB(cpu, bytes), memory)
}

// WriteBoundLine says which side limited a write, and by how much.
func WriteBoundLine(res pipeline.WriteResult) string {
	switch jsonevents.BoundOf(res.Bound) {
	case jsonevents.BoundDecoder:
		return fmt.Sprintf("Bottleneck: the decoder (busy %.1fx longer than the device; the writer waited %s for data)", res.BoundRatio, res.DecoderWait.Round(time.Millisecond))
	case jsonevents.BoundDevice:
		return fmt.Sprintf("Bottleneck: the device (busy %.1fx longer than the decoder; the decoder waited %s for free buffers)", res.BoundRatio, res.DeviceWait.Round(time.Millisecond))
	}
	return "Bottleneck: none measured"
}

// Rate is n bytes over d, per second; 0 for no time.
func Rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// ReadBoundLine says which side limited a backup, and by how much.
func ReadBoundLine(res pipeline.ReadResult) string {
	if res.Bound == pipeline.BoundSink {
		return fmt.Sprintf("Bottleneck: compressing and writing the file (busy %.1fx longer than the card)", res.BoundRatio)
	}
	return fmt.Sprintf("Bottleneck: the card (busy %.1fx longer than compressing and writing)", res.BoundRatio)
}

// Plural is n of noun in words that agree with it: "1 command",
// "2 commands", "0 commands".
func Plural[T ~int | ~int64](n T, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
