// uasprobe: the ceiling of a userspace UAS writer without streams (high speed: QEMU's usb-uas on
// usb-ehci) in the emulator. A minimal WRITE(10) loop over libusb, one command at a time, its data
// from usbfs zero-copy memory (libusb_dev_mem_alloc), in the UAS sequence at its least: the status
// read is submitted with the COMMAND IU and again with the data transfer (as Linux's uas keeps one
// waiting), so WRITE READY and the SENSE IU find it queued. Writes zeros from LBA 0 onward to the
// first high-speed 46f4:0003 device (pipes by QEMU's endpoint numbers: command 0x01, status 0x82,
// data-out 0x04). With FILE, each command's data is read from it first (pread into the same
// buffer), as a writer of an image has to. Build: gcc -O2 -o uasprobe uasprobe.c -lusb-1.0 ; run
// it in the QEMU guest.
// usage: uasprobe XFER_KIB TOTAL_MIB [FILE]
#include <libusb-1.0/libusb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

static void done_cb(struct libusb_transfer *t) { *(int *)t->user_data = 1; }

// run submits the transfers in order and waits until all are back; 0 when each completed.
static int run(libusb_context *ctx, struct libusb_transfer **ts, int n) {
	int flags[4] = {0};
	for (int i = 0; i < n; i++) {
		ts[i]->user_data = &flags[i];
		int r = libusb_submit_transfer(ts[i]);
		if (r) { fprintf(stderr, "submit: %s\n", libusb_error_name(r)); return -1; }
	}
	for (int i = 0; i < n; i++) {
		while (!flags[i]) {
			int r = libusb_handle_events_completed(ctx, &flags[i]);
			if (r) { fprintf(stderr, "events: %s\n", libusb_error_name(r)); return -1; }
		}
		if (ts[i]->status != LIBUSB_TRANSFER_COMPLETED) { fprintf(stderr, "transfer %d: status %d\n", i, ts[i]->status); return -1; }
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) { fprintf(stderr, "usage: uasprobe XFER_KIB TOTAL_MIB [FILE]\n"); return 2; }
	int fd = -1;
	if (argc > 3 && (fd = open(argv[3], O_RDONLY)) < 0) { perror(argv[3]); return 1; }
	size_t xfer = (size_t)atoi(argv[1]) * 1024, total = (size_t)atoi(argv[2]) << 20;
	libusb_context *ctx; libusb_init(&ctx);
	libusb_device **list; ssize_t nd = libusb_get_device_list(ctx, &list);
	libusb_device_handle *h = NULL;
	for (ssize_t i = 0; i < nd && !h; i++) {
		struct libusb_device_descriptor dd;
		if (libusb_get_device_descriptor(list[i], &dd) || dd.idVendor != 0x46f4 || dd.idProduct != 0x0003) continue;
		if (libusb_get_device_speed(list[i]) != LIBUSB_SPEED_HIGH) continue;
		if (libusb_open(list[i], &h)) h = NULL;
	}
	libusb_free_device_list(list, 1);
	if (!h) { fprintf(stderr, "no high-speed 46f4:0003\n"); return 1; }
	libusb_set_auto_detach_kernel_driver(h, 1);
	int r = libusb_claim_interface(h, 0);
	if (r) { fprintf(stderr, "claim: %s\n", libusb_error_name(r)); return 1; }
	unsigned char *buf = libusb_dev_mem_alloc(h, xfer), *small = libusb_dev_mem_alloc(h, 4096);
	if (!buf || !small) { fprintf(stderr, "UASZC dev_mem_alloc refused\n"); return 1; }
	memset(buf, 0, xfer);
	unsigned char *iu = small, *st = small + 512;
	struct libusb_transfer *tc = libusb_alloc_transfer(0), *ts = libusb_alloc_transfer(0), *td = libusb_alloc_transfer(0);
	uint32_t lba = 0, blocks = xfer / 512;
	uint16_t tag = 1;
	double t0 = now();
	for (size_t done = 0; done < total; done += xfer, lba += blocks) {
		if (fd >= 0 && pread(fd, buf, xfer, done) != (ssize_t)xfer) { fprintf(stderr, "short read at %zu\n", done); return 1; }
		memset(iu, 0, 32);
		iu[0] = 0x01; iu[2] = tag >> 8; iu[3] = tag; // COMMAND IU, SIMPLE, LUN 0
		unsigned char *c = iu + 16; c[0] = 0x2A;
		c[2] = lba >> 24; c[3] = lba >> 16; c[4] = lba >> 8; c[5] = lba;
		c[7] = blocks >> 8; c[8] = blocks;
		libusb_fill_bulk_transfer(ts, h, 0x82, st, 128, done_cb, NULL, 10000);
		libusb_fill_bulk_transfer(tc, h, 0x01, iu, 32, done_cb, NULL, 10000);
		struct libusb_transfer *a[] = {ts, tc};
		if (run(ctx, a, 2)) return 1;
		if (st[0] != 0x07 || ts->actual_length < 4) { fprintf(stderr, "want WRITE READY, got IU 0x%02x\n", st[0]); return 1; }
		libusb_fill_bulk_transfer(td, h, 0x04, buf, xfer, done_cb, NULL, 30000);
		libusb_fill_bulk_transfer(ts, h, 0x82, st, 128, done_cb, NULL, 10000);
		struct libusb_transfer *b[] = {td, ts};
		if (run(ctx, b, 2)) return 1;
		if (st[0] != 0x03 || st[6] != 0 || td->actual_length != (int)xfer) { fprintf(stderr, "want GOOD, got IU 0x%02x status %d, %d bytes\n", st[0], st[6], td->actual_length); return 1; }
		tag = tag % 32 + 1;
	}
	double t1 = now();
	printf("UASZC xfer=%zuKiB total=%zuMiB read=%d: %.1f MB/s\n", xfer / 1024, total >> 20, fd >= 0, total / (t1 - t0) / 1e6);
	libusb_release_interface(h, 0); libusb_close(h); libusb_exit(ctx);
	return 0;
}
