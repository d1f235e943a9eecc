package flash

import (
	"context"
	"fmt"

	"github.com/usbflash/usbflash/imagesrc"
	"github.com/usbflash/usbflash/imagesrc/httpsrc"
)

// An image at an http(s) URL is read as one stream straight into the
// decoders (httpsrc resumes a dropped connection or a stall without their
// noticing); its checksum list, the list's signature and its block map
// are looked for beside the URL as beside a file, with the same rules.

// isURL says the image is at an http(s) URL.
func isURL(image string) bool { return httpsrc.IsURL(image) }

// displayImage is the image as messages show it: a URL without its query
// (a signed URL's token) or password.
func displayImage(image string) string {
	if isURL(image) {
		return httpsrc.Display(image)
	}
	return image
}

// httpClient is the session's, made on first use: its resumes are said
// on the progress line.
func (s *session) httpClient() *httpsrc.Client {
	s.httpOnce.Do(func() {
		o := s.cfg.HTTP
		if o.UserAgent == "" {
			o.UserAgent = "usbflash"
		}
		said := o.OnRetry
		o.OnRetry = func(r httpsrc.Retry) {
			s.emit(Note{Message: r.String()})
			if said != nil {
				said(r)
			}
		}
		s.http = httpsrc.New(o)
	})
	return s.http
}

// readBeside reads a file beside a URL image; nil for a file image.
func (s *session) readBeside(ctx context.Context) imagesrc.ReadFunc {
	if !isURL(s.cfg.Image) {
		return nil
	}
	return func(name string, limit int64) ([]byte, error) { return s.httpClient().ReadFile(ctx, name, limit) }
}

// openImage opens the image; a stream is hashed as it is read when there
// is a download to check (it cannot be read again).
func (s *session) openImage(ctx context.Context, d *download) (*imagesrc.Source, error) {
	opts := imagesrc.Options{HashStream: d != nil, Stdin: s.cfg.Stdin}
	if !isURL(s.cfg.Image) {
		src, err := imagesrc.OpenWith(s.cfg.Image, opts)
		if err != nil {
			return nil, &ImageError{Err: err}
		}
		return src, nil
	}
	b, err := s.httpClient().Open(ctx, s.cfg.Image)
	if err != nil {
		return nil, &ImageError{Err: err}
	}
	src, err := imagesrc.OpenStream(b, b.Size(), b.Name(), opts)
	if err != nil {
		b.Close()
		return nil, &ImageError{Err: fmt.Errorf("image %s: %w", b.URL(), err)}
	}
	return src, nil
}
