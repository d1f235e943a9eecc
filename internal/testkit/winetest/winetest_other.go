//go:build !windows

package winetest

func running() bool { return false }
