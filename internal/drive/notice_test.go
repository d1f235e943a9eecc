package drive

import (
	"testing"

	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/usbms"
)

// TestNoticeOf: every kind and recovery step of a transport's notice has
// its own in observe's words, and the facts come along.
func TestNoticeOf(t *testing.T) {
	for _, tc := range []struct {
		in   usbms.Notice
		want observe.Notice
	}{
		{usbms.Notice{Kind: usbms.NoticeRecovery, Text: "reset", Step: usbms.StepReset},
			observe.Notice{Kind: observe.NoticeRecovery, Text: "reset", Step: observe.StepReset, USBID: "0bda:0158"}},
		{usbms.Notice{Kind: usbms.NoticeRecovery, Step: usbms.StepPortReset},
			observe.Notice{Kind: observe.NoticeRecovery, Step: observe.StepPortReset, USBID: "0bda:0158"}},
		{usbms.Notice{Kind: usbms.NoticeRecovery, Step: usbms.StepLUNReset},
			observe.Notice{Kind: observe.NoticeRecovery, Step: observe.StepLUNReset, USBID: "0bda:0158"}},
		{usbms.Notice{Kind: usbms.NoticeTransferCap, Failed: 1 << 20, Cap: 64 << 10},
			observe.Notice{Kind: observe.NoticeTransferCap, Failed: 1 << 20, Cap: 64 << 10, USBID: "0bda:0158"}},
		{usbms.Notice{Kind: usbms.NoticeOneMedium},
			observe.Notice{Kind: observe.NoticeOneMedium, USBID: "0bda:0158"}},
		{usbms.Notice{Kind: usbms.NoticeSetting, Setting: usbms.SettingQueueDepth},
			observe.Notice{Kind: observe.NoticeSetting, Setting: usbms.SettingQueueDepth, USBID: "0bda:0158"}},
	} {
		if got := noticeOf(tc.in, "0bda:0158"); got != tc.want {
			t.Errorf("noticeOf(%+v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if got := observe.RecoverySteps(); len(got) != 3 {
		t.Errorf("RecoverySteps() = %v, want the three steps noticeOf gives", got)
	}
}
