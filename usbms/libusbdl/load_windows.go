//go:build windows

package libusbdl

import "golang.org/x/sys/windows"

// openLibrary loads the DLL at path, an absolute path (candidates gives
// no other): its own directory is searched for what it needs in turn,
// the current directory never.
func openLibrary(path string) (uintptr, error) {
	h, err := windows.LoadLibraryEx(path, 0, windows.LOAD_WITH_ALTERED_SEARCH_PATH)
	return uintptr(h), err
}

func symbol(h uintptr, name string) (uintptr, error) {
	return windows.GetProcAddress(windows.Handle(h), name)
}
