package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"
)

// Serve serves the page on ln until ctx ends or serving fails; stopping
// is told when ctx ends, before the sessions are stopped (as a stop
// request stops them: the page shows how they end until they have).
func (s *Server) Serve(ctx context.Context, ln net.Listener, stopping func()) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		stopping()
	}
	s.Close()
	hs.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// PageURL is the address that opens the page with its token: at the host
// listen names, or loopback's for an unspecified one, and addr's port.
func PageURL(listen string, addr *net.TCPAddr, token string) string {
	host, _, _ := net.SplitHostPort(listen)
	if host == "" || addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return fmt.Sprintf("http://%s/#token=%s", net.JoinHostPort(host, strconv.Itoa(addr.Port)), token)
}

// OpenBrowser opens url in the desktop's browser, when there is a
// desktop.
func OpenBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no desktop to open the page on (neither DISPLAY nor WAYLAND_DISPLAY is set)")
		}
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("opening the page: %w", err)
	}
	go cmd.Wait() //nolint:errcheck // the browser outlives nothing here
	return nil
}
