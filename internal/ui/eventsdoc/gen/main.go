// Command gen writes docs/events.md from the events schema:
//
//	go run ./internal/eventsdoc/gen SCHEMA OUT
//
// cmd/usbflash's go:generate runs it.
package main

import (
	"fmt"
	"os"

	"github.com/usbflash/usbflash/internal/ui/eventsdoc"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gen SCHEMA OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(schema, out string) error {
	b, err := os.ReadFile(schema)
	if err != nil {
		return err
	}
	doc, err := eventsdoc.Render(b)
	if err != nil {
		return err
	}
	return os.WriteFile(out, doc, 0o644)
}
