package winetest

import "golang.org/x/sys/windows"

// running: Wine's ntdll alone exports wine_get_version.
func running() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
