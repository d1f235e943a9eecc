// Package browsertest drives usbflash's page (usbflash serve) in a real
// Chromium, through the DevTools protocol (chromedp), against simulated
// readers, and checks every card it writes byte for byte. It holds only
// tests: they build the usbflash binary (or take USBFLASH_BIN), start
// `usbflash serve` with sim: cards, and click through the page as a person
// would. Without Chromium they skip, except in CI (CI set, or
// USBFLASH_BROWSER_REQUIRE=1), where they fail. USBFLASH_SCREENSHOTS=DIR
// saves the page's screenshots there (make screenshots: docs/screenshots).
package browsertest
