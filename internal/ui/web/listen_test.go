package web

import (
	"net"
	"testing"
)

// TestPageURL: the page is opened at the host listened on, loopback's for
// an unspecified one, with the port the system gave and the token.
func TestPageURL(t *testing.T) {
	for _, tc := range []struct {
		listen string
		addr   *net.TCPAddr
		want   string
	}{
		{"127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4321}, "http://127.0.0.1:4321/#token=T"},
		{":8080", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://127.0.0.1:8080/#token=T"},
		{"0.0.0.0:0", &net.TCPAddr{IP: net.IPv4zero, Port: 9}, "http://127.0.0.1:9/#token=T"},
		{"box.lan:80", &net.TCPAddr{IP: net.IPv4(192, 168, 1, 2), Port: 80}, "http://box.lan:80/#token=T"},
		{"[::1]:0", &net.TCPAddr{IP: net.IPv6loopback, Port: 7}, "http://[::1]:7/#token=T"},
	} {
		if got := PageURL(tc.listen, tc.addr, "T"); got != tc.want {
			t.Errorf("PageURL(%s, %v) = %s, want %s", tc.listen, tc.addr, got, tc.want)
		}
	}
}
