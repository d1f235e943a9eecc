//go:build libusb && !nousb

package main

// testBuildTags builds the binary under test as this test binary was built.
const testBuildTags = "libusb"
