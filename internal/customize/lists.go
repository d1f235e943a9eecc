package customize

import (
	"slices"
	"strings"
)

// The lists a value is checked against. Each is copied from its standard's
// source, named beside it, so that a check does not depend on what the host
// running usbflash has installed.

// countryCodes are the ISO 3166-1 alpha-2 codes assigned to countries and
// territories: tzdata's iso3166.tab (2025b, "current as of ISO/TC 46 N1108
// (2023-04-05)"), the list Wi-Fi regulatory domains are named from.
const countryCodes = `
AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS
BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE
EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM
HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC
LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA
NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW
SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO
TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW
`

// keymaps are the XKB keyboard layouts that /etc/default/keyboard's
// XKBLAYOUT names: xkeyboard-config 2.35.1's base.lst (Debian 12), the same
// list Raspberry Pi Imager offers (src/keymap-layouts.txt).
const keymaps = `
af al am ara at au az ba bd be bg br brai bt bw by ca cd ch cm cn cz de dk dz ee epo es et fi
fo fr gb ge gh gn gr hr hu id ie il in iq ir is it jp jv ke kg kh kr kz la latam lk lt lv ma
mao md me mk ml mm mn mt mv my ng nl no np ph pk pl pt ro rs ru se si sk sn sy tg th tj tm tr
tw tz ua us uz vn za
`

// listed says whether word is one of list's words.
func listed(list, word string) bool { return slices.Contains(strings.Fields(list), word) }
