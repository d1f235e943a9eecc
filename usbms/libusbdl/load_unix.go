//go:build linux || darwin

package libusbdl

import "github.com/ebitengine/purego"

// openLibrary dlopens path (a bare name goes through the loader's search).
func openLibrary(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func symbol(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
