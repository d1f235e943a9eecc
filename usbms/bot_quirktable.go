package usbms

// botQuirkTable is the quirk table of the readers driven over Bulk-Only
// Transport, as data: the entries of Linux's usb-storage table
// (unusual_devs.h) that concern a Bulk-Only writer, transcribed as facts,
// one a line (the readers driven over UAS have theirs in
// uas_quirktable.go, as Linux's uas has unusual_uas.h):
//
//	VID:PID BCDLO-BCDHI LETTERS [TABLE-ONLY FLAGS] [(override SUBCLASS/PROTOCOL; init ...)]  # vendor / product
//
// LETTERS are the kernel's usb-storage.quirks= letters ("-": none), the
// flags after them those it sets only from its table (IGNORE_TAG is
// BULK_IGNORE_TAG). Entries forced onto the Control/Bulk transport are
// left out, and so are entries whose only flags concern no Bulk-Only
// writer, unless they override the descriptors. The parenthesised
// descriptor overrides and "bind-only" entries are kept as facts; usbflash
// does not apply them (its listing goes by the descriptors).
const botQuirkTable = `
03eb:2002 0100-0100 r  # ATMEL / SND1 Storage
03ee:6906 0003-0003 r  # VIA Technologies Inc. / Mitsumi multi cardreader
03f0:070c 0000-0000 a  # HP / Personal Media Drive
03f0:4002 0001-0001 c  # HP / PhotoSmart R707
0409:0040 0000-9999 s  # NEC / NEC USB UF000x
040d:6205 0003-0003 r  # VIA Technologies Inc. / USB 2.0 Card Reader
0411:001c 0113-0113 - FIX_INQUIRY  # Buffalo / DUB-P40G HDD
0419:0100 0100-0100 r  # Samsung Info. Systems America, Inc. / MP3 Player
0419:aace 0100-0100 r  # Samsung / MP3 Player
0419:aaf5 0100-0100 lr  # TrekStor / i.Beat 115 2.0
0419:aaf6 0100-0100 r  # TrekStor / i.Beat Joy 2.0
0420:0001 0100-0100 r  # GENERIC / MP3 PLAYER
0421:0019 0592-0610 m  # Nokia / Nokia 6288
0421:042e 0100-0100 cr  # Nokia / Nokia 3250
0421:0433 0100-0100 cr  # Nokia / E70
0421:0434 0100-0100 cr  # Nokia / E60
0421:0444 0100-0100 cr  # Nokia / N91
0421:0446 0100-0100 cr  # Nokia / N80
0421:044e 0100-0100 cr  # Nokia / E61
0421:047c 0370-0610 m  # Nokia / 6131
0421:0492 0452-9999 m  # Nokia / Nokia 6233
0421:0495 0370-0370 m  # Nokia / 6234
0421:04b9 0350-0350 m  # Nokia / 5300
0421:05af 0742-0742 m  # Nokia / 305
0421:06aa 1110-1110 m  # Nokia / 502
0451:5416 0100-0100 - NEED_OVERRIDE (override DEVICE/BULK)  # Neuros Audio / USB 2.0 HD 2.5
0457:0150 0100-0100 l  # USBest Technology / USB Mass Storage Device
0457:0151 0100-0100 l  # USB 2.0 / Flash Disk
045e:ffff 0000-0000 m  # Mitac / GPS
046b:ff40 0100-0100 w  # AMI / Virtual Floppy
0480:d010 0100-9999 y  # Toshiba / External USB 3.0
0482:0103 0100-0100 - FIX_INQUIRY  # Kyocera / Finecam S5
0482:0107 0100-0100 cl  # Kyocera / CONTAX SL300R T*
04a5:3010 0100-0100 r  # Tekom Technologies, Inc / 300_CAMERA
04b0:0301 0010-0010 l  # NIKON / NIKON DSC E2000
04b8:0602 0110-0110 s (override SCSI/BULK)  # Epson / 785EPX Storage
04c5:2028 0001-0001 l  # iODD / 2531/2541
04cb:0100 0000-2210 s FIX_INQUIRY (override UFI/DEVICE)  # Fujifilm / FinePix 1400Zoom
04ce:0002 0000-026b c IGNORE_TAG  # ScanLogic / SL11R-IDE
04ce:0002 026c-026c c  # ScanLogic / SL11R-IDE
04da:0901 0100-0200 - (override UFI/DEVICE)  # Panasonic / LS-120 Camera
04da:2372 0000-9999 cl  # Panasonic / DMC-LCx Camera
04da:2373 0000-9999 cl  # LEICA / D-LUX Camera
04e6:0006 0205-0205 s (override SCSI/DEVICE)  # Shuttle / eUSB MMC Adapter
04e6:000b 0100-0100 - (override SCSI/BULK; init euscsi)  # Shuttle / eUSCSI Bridge
04e6:000c 0100-0100 - (override SCSI/BULK; init euscsi)  # Shuttle / eUSCSI Bridge
04e6:000f 0000-9999 - (override SCSI/BULK; init euscsi)  # SCM Microsystems / eUSB SCSI Adapter (Bus Powered)
04e8:507c 0220-0220 m  # Samsung / YP-U3
04e8:5122 0000-9999 m IGNORE_TAG  # Samsung / YP-CP3
04e8:5136 0000-9999 m  # Samsung / YP-Z3
04fc:80c2 0100-0100 - BULK32  # Kobian Mercury / Binocam DCB-132
050d:0115 0133-0133 - (override SCSI/BULK; init euscsi)  # Belkin / USB SCSI Adaptor
0525:a140 0100-0100 - FIX_INQUIRY (override 8070/DEVICE)  # Iomega / USB Clik! 40
0525:a4a5 0000-9999 o  # Linux / File-backed Storage Gadget
052b:1801 0100-0100 r  # Tekom Technologies, Inc / 300_CAMERA
052b:1804 0100-0100 r  # Tekom Technologies, Inc / 300_CAMERA
052b:1807 0100-0100 r  # Tekom Technologies, Inc / 300_CAMERA
052b:1905 0100-0100 r  # Tekom Technologies, Inc / 400_CAMERA
052b:1911 0100-0100 r  # Tekom Technologies, Inc / 400_CAMERA
054c:0010 0106-0450 lsw (override SCSI/DEVICE)  # Sony / DSC-S30/S70/S75/505V/F505/F707/F717/P8
054c:0010 0500-0610 s (override 8070/DEVICE)  # Sony / DSC-T1/T5/H5
054c:0025 0100-0100 s  # Sony / Memorystick NW-MS7
054c:002c 0501-2000 s  # Sony / USB Floppy Drive
054c:002d 0100-0100 s  # Sony / Memorystick MSAC-US1
054c:002e 0106-0310 s (override SCSI/DEVICE)  # Sony / Handycam
054c:002e 0500-0500 s (override UFI/DEVICE)  # Sony / Handycam HC-85
054c:0032 0000-9999 s  # Sony / Memorystick MSC-U01N
054c:0058 0000-9999 - FIX_INQUIRY  # Sony / PEG N760c Memorystick
054c:006d 0000-9999 - FIX_INQUIRY  # Sony / PEG Mass Storage
054c:0099 0000-9999 - FIX_INQUIRY  # Sony / PEG Mass Storage
054c:016a 0000-9999 - FIX_INQUIRY  # Sony / PEG Mass Storage
054c:02a5 0100-0100 e  # Sony Corp. / MicroVault Flash Drive
055d:2020 0000-0210 s  # SAMSUNG / SFD-321U [FW 0C]
057b:0022 0000-9999 - (bind-only)  # Y-E Data / Silicon Media R/W
058f:6387 0141-0141 m  # JetFlash / TS1GJF2A/120
0595:4343 0000-2210 - (override 8070/DEVICE)  # Fujifilm / Digital Camera EX-20 DSC
059b:0001 0100-0100 s  # Iomega / ZIP 100
059b:0040 0100-0100 s  # Iomega / Jaz USB Adapter
059f:0643 0000-0000 - GO_SLOW  # LaCie / DVD+-RW
059f:0651 0000-0000 w  # LaCie / External HDD
05ab:0060 1104-1110 - NEED_OVERRIDE (override SCSI/BULK)  # In-System / PyroGate External CD-ROM Enclosure (FCD-
05ac:1202 0000-9999 c  # Apple / iPod
05ac:1203 0000-9999 c  # Apple / iPod
05ac:1204 0000-9999 cl  # Apple / iPod
05ac:1205 0000-9999 c  # Apple / iPod
05ac:120a 0000-9999 c  # Apple / iPod
05dc:b002 0000-0113 - FIX_INQUIRY  # Lexar / USB CF Reader
05e3:0701 0000-ffff mr GO_SLOW  # Genesys Logic / USB to IDE Optical
05e3:0702 0000-ffff mr GO_SLOW  # Genesys Logic / USB to IDE Disk
05e3:0723 9451-9451 a  # Genesys Logic / USB to SATA
0636:0003 0000-9999 - FIX_INQUIRY (override SCSI/BULK)  # Vivitar / Vivicam 35Xx
066f:8000 0001-0001 c  # SigmaTel / USBMSC Audio Player
067b:1063 0100-0100 b  # Prolific Technology, Inc. / Prolific Storage Gadget
067b:2317 0001-0001 l  # Prolific Technology, Inc. / Mass Storage Device
067b:2507 0001-0100 c GO_SLOW  # Prolific Technology Inc. / Mass Storage Device
067b:3507 0001-0101 c GO_SLOW  # Prolific Technology Inc. / ATAPI-6 Bridge Controller
0686:4011 0001-0001 - (override SCSI/BULK)  # Minolta / Dimage F300
0686:4017 0001-0001 - (override SCSI/DEVICE)  # Minolta / DIMAGE E223
0693:0005 0100-0100 - (override SCSI/BULK)  # Hagiwara / Flashgate
069b:3004 0001-0001 c  # Thomson Multimedia Inc. / RCA RD1080 MP3 Player
071b:3203 0000-0000 emw  # RockChip / MP3
071b:32bb 0000-0000 mw  # RockChip / MTP
071b:3203 0100-0100 m  # RockChip / ROCK MP3
0727:0306 0100-0100 r  # ATMEL / SND1 Storage
0781:0002 0009-0009 c  # SanDisk Corporation / ImageMate CompactFlash USB
07ab:fccd 0000-9999 c  # Freecom Technologies / FHD-Classic
07c4:a400 0000-ffff c FIX_INQUIRY  # Datafab / KECF-USB
07c4:a4a5 0000-ffff mr  # Simple Tech/Datafab / CF+SM Reader
07cf:1167 0100-0100 - (override 8070/DEVICE)  # Casio / EX-N1 DigitalCamera
0839:000a 0001-0001 - FIX_INQUIRY  # Samsung / Digimax 410
0840:0082 0001-0001 c  # Argosy / Storage
0840:0084 0001-0001 c  # Argosy / Storage
0840:0085 0001-0001 c  # Argosy / Storage
084d:0011 0110-0110 - BULK32  # Grandtech / DC2MEGA
0851:1542 0002-0002 - (bind-only)  # MagicPixel / FW_Omega2
0851:1543 0200-0200 l  # PanDigital / Photo Frame
08bd:1100 0000-0000 s  # CITIZEN / X1DE-USB
08ca:3103 0100-0100 r  # AIPTEK / Aiptek USB Keychain MP3 Player
090a:1001 0100-0100 - NEED_OVERRIDE (override DEVICE/BULK)  # Trumpion / t33520 USB Flash Card Controller
090a:1050 0100-0100 - (override UFI/DEVICE)  # Trumpion Microelectronics, Inc. / 33520 USB Digital 
090a:1200 0000-9999 - (override RBC/BULK)  # Trumpion / MP3 player
090c:1000 1100-1100 m  # Samsung / Flash Drive FIT
090c:1132 0000-ffff c  # Feiya / 5-in-1 Card Reader
090c:3350 0000-ffff b  # SMI / SM3350 UFS-to-USB-Mass-Storage bridge
090c:6000 0100-0100 n  # Feiya / SD/SDHC Card Reader
0a17:0004 1000-1000 - FIX_INQUIRY  # Pentax / Optio 2/3/400
0af0:7401 0000-0000 - (bind-only)  # Option / GI 0401 SD-Card
0af0:7501 0000-0000 - (bind-only)  # Option / GI 0431 SD-Card
0af0:7701 0000-0000 - (bind-only)  # Option / GI 0451 SD-Card
0af0:7706 0000-0000 - (bind-only)  # Option / GI 0451 SD-Card
0af0:7901 0000-0000 - (bind-only)  # Option / GI 0452 SD-Card
0af0:7a01 0000-0000 - (bind-only)  # Option / GI 0461 SD-Card
0af0:7a05 0000-0000 - (bind-only)  # Option / GI 0461 SD-Card
0af0:8300 0000-0000 - (bind-only)  # Option / GI 033x SD-Card
0af0:8302 0000-0000 - (bind-only)  # Option / GI 033x SD-Card
0af0:8304 0000-0000 - (bind-only)  # Option / GI 033x SD-Card
0af0:c100 0000-0000 - (bind-only)  # Option / GI 070x SD-Card
0af0:d057 0000-0000 - (bind-only)  # Option / GI 1505 SD-Card
0af0:d058 0000-0000 - (bind-only)  # Option / GI 1509 SD-Card
0af0:d157 0000-0000 - (bind-only)  # Option / GI 1515 SD-Card
0af0:d257 0000-0000 - (bind-only)  # Option / GI 1215 SD-Card
0af0:d357 0000-0000 - (bind-only)  # Option / GI 1505 SD-Card
0bc2:2300 0000-9999 p  # Seagate / Portable HDD
0bc2:3010 0000-0000 a  # Seagate / FreeAgent Pro
0bc2:3332 0000-9999 w  # Seagate / External
0d49:7310 0000-9999 a  # Maxtor / USB to SATA
0c45:1060 0100-0100 s  # Unknown / Unknown
0d96:410a 0001-ffff - FIX_INQUIRY  # Medion / MD 7425
0d96:5200 0001-0200 - FIX_INQUIRY  # Jenoptik / JD 5200 z3
0dc4:0073 0000-0000 c  # Macpower Technology Co.LTD. / USB 2.0 3.5" DEVICE
0dd8:1060 0000-ffff - FIX_INQUIRY  # Netac / USB-CF-Card
0dd8:d202 0000-9999 r  # Netac / USB Flash Disk
0dda:0001 0012-0012 r  # WINWARD / Music Disk
0dda:0301 0012-0012 r  # PNP_MP3 / PNP_MP3 PLAYER
0e21:0520 0100-0100 - NEED_OVERRIDE (override DEVICE/BULK)  # Cowon Systems / iAUDIO M5
0ed1:6660 0100-0300 - FIX_INQUIRY  # USB / Solid state disk
0ea0:2168 0110-0110 r  # Ours Technology / Flash Disk
0ea0:6828 0110-0110 r  # USB / Flash Disk
0ed1:7636 0103-0103 mr GO_SLOW  # Typhoon / My DJ 1820
0f19:0103 0100-0100 r  # Oracom Co., Ltd / ORC-200M
0f19:0105 0100-0100 r  # C-MEX / A-VOX
0f88:042e 0100-0100 c  # VTech / Kidizoom
0fca:8004 0201-0201 m  # Research In Motion / BlackBerry Bold 9000
0fce:d008 0000-0000 w  # Sony Ericsson / V800-Vodafone 802
0fce:e030 0000-0000 cr  # Sony Ericsson / P990i
0fce:e031 0000-0000 cr  # Sony Ericsson / M600i
0fce:e092 0000-0000 r  # Sony Ericsson / P1i
1058:0704 0000-9999 a  # Western Digital / External HDD
1058:070a 0000-9999 p  # Western Digital / My Passport HDD
10d6:2200 0100-0100 - (bind-only)  # Actions Semiconductor / Mtp device
1210:0003 0100-0100 r  # Digitech HMG / DigiTech Mass Storage
132b:000b 0001-0001 - (bind-only)  # Minolta / Dimage Z10
1370:6828 0110-0110 r  # SWISSBIT / Black Silver
13fd:3609 0209-0209 r  # Initio Corporation / INIC-3619
13fe:3600 0100-0100 - IGNORE_TAG  # Kingston / DT 101 G2
14cd:6600 0201-0201 r  # Super Top / IDE DEVICE
152d:2329 0100-0100 ar  # JMicron / USB to ATA/ATAPI Bridge
1652:6600 0201-0201 r  # Teac / HD-35PUK-B
174c:55aa 0100-0100 - NEEDS_CAP16  # ASMedia / AS2105
177f:0400 0000-0000 m IGNORE_TAG  # Yarvik / PMP400
1908:1315 0000-0000 b  # BUILDWIN / Photo Frame
1908:1320 0000-0000 b  # BUILDWIN / Photo Frame
1949:0004 0000-9999 - SENSE_AFTER_SYNC  # Amazon / Kindle
19d2:1225 0000-ffff s  # ZTE,Incorporated / ZTE WCDMA Technologies MSM
1b1c:1ab5 0200-0200 n  # Corsair / Padlock v2
1e68:001b 0000-0000 ar  # TrekStor GmbH & Co. KG / DataStation maxi g.u
1e74:4621 0000-0000 m IGNORE_TAG  # Coby Electronics / MP3 Player
1fc9:0117 0100-0100 r  # NXP Semiconductors / PN7462AU
2116:0320 0001-0001 c  # ST / 2A
22b8:3010 0001-0001 cr  # Motorola / RAZR V3x
22b8:6426 0101-0101 c FIX_INQUIRY,IGNORE_TAG  # Motorola / MSnc.
2735:100b 0000-9999 - GO_SLOW  # MPIO / HS200
3340:ffff 0000-0000 m  # Mitac / Mio DigiWalker USB Sync
4102:1020 0100-0100 r  # iRiver / MP3 T10
4102:1059 0000-0000 m  # iRiver / P7K
4146:ba01 0100-0100 l  # Iomega / Micro Mini 1GB
4971:8024 0000-9999 y  # SimpleTech / External HDD
c251:4003 0100-0100 l  # Keil Software, Inc. / V2M MotherBoard
ed06:4500 0001-0001 h  # DataStor / USB4500 FW1.04
ed10:7636 0001-0001 l  # TGE / Digital MP3 Audio Player
0421:06c2 0000-0406 m  # Nokia / (added 2025)
0603:8611 0000-ffff - IGNORE_TAG  # (added 2025)
`
