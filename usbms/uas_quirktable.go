package usbms

// uasQuirkTable is the quirk table of the readers driven over UAS: the
// entries of Linux's uas table (unusual_uas.h, 2025: 23 entries),
// transcribed as facts in the format of botQuirkTable (bot_quirktable.go),
// one a line:
//
//	VID:PID BCDLO-BCDHI LETTERS [TABLE-ONLY FLAGS]  # vendor / product
//
// As in Linux, a reader driven over UAS takes its flags from this table
// and a reader driven over Bulk-Only from usb-storage's; the overrides
// (usb-storage.quirks=, $USBFLASH_QUIRKS, the setting) apply to both.
// IGNORE_UAS (u) from either table is read by ChooseTransport; most other
// flags here concern commands usbflash never sends (f, k, t, BROKEN_FUA)
// and are carried so that info and list show them.
const uasQuirkTable = `
054c:087d 0000-9999 f  # Sony / PSZ-HA*
059f:105f 0000-9999 fk  # LaCie / 2Big Quadra USB3
059f:1061 0000-9999 fk  # LaCie / Rugged USB3-FW
0781:55e8 0000-9999 u  # SanDisk
090c:2000 0000-9999 u  # Hiksemi / External HDD
0984:0301 0128-0128 u  # Apricorn
0b05:1932 0000-9999 u  # ASUS / External HDD
0bc2:331a 0000-9999 j  # Seagate / Expansion Desk
125f:a94a 0160-0160 t  # ADATA / Portable HDD CH94
13fd:3940 0000-9999 rt  # Initio Corporation / INIC-3069
152d:0539 0000-9999 f  # JMicron / JMS539
152d:0567 0000-9999 f BROKEN_FUA  # JMicron / JMS567
152d:0578 0000-9999 - BROKEN_FUA  # JMicron / JMS567
152d:0583 0000-9999 f  # JMicron / JMS583Gen 2
154b:f00b 0000-9999 t  # PNY / Pro Elite SSD
154b:f00d 0000-9999 t  # PNY / Pro Elite SSD
17ef:3899 0000-9999 u  # Thinkplus / External HDD
2109:0711 0000-9999 t  # VIA / VL711
2537:1068 0000-9999 u  # Norelsys / NS1068X
357d:7788 0000-9999 fu  # JMicron / JMS566
4971:1012 0000-9999 u  # Hitachi / External HDD
4971:8017 0000-9999 f  # SimpleTech / External HDD
4971:8024 0000-9999 y  # SimpleTech / External HDD
`
