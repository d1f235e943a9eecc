//go:build !nousb && !libusb

package main

// testBuildTags builds the binary under test as this test binary was built.
const testBuildTags = ""
