package drive

import (
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/usbms"
)

// noticeOf is a reader's notice in the sessions' words (observe.Notice),
// with the reader's VID:PID: the one place a transport's notice becomes
// an event's, so that no session, presenter or counter of notices needs
// the transport's vocabulary.
func noticeOf(n usbms.Notice, usbID string) observe.Notice {
	out := observe.Notice{Text: n.Text, Failed: n.Failed, Cap: n.Cap, USBID: usbID, Setting: n.Setting, Step: recoveryStep(n.Step)}
	if out.USBID == "" {
		out.USBID = n.USBID
	}
	switch n.Kind {
	case usbms.NoticeRecovery:
		out.Kind = observe.NoticeRecovery
	case usbms.NoticeTransferCap:
		out.Kind = observe.NoticeTransferCap
	case usbms.NoticeOneMedium:
		out.Kind = observe.NoticeOneMedium
	case usbms.NoticeSetting:
		out.Kind = observe.NoticeSetting
	}
	return out
}

// recoveryStep is a transport's recovery step in observe's words; "" for
// a notice that is no recovery.
func recoveryStep(s usbms.RecoveryStep) observe.RecoveryStep {
	switch s {
	case usbms.StepReset:
		return observe.StepReset
	case usbms.StepPortReset:
		return observe.StepPortReset
	case usbms.StepLUNReset:
		return observe.StepLUNReset
	}
	return observe.RecoveryStep(s)
}
