package scsi

import "errors"

// AsSense returns the *SenseError in err's chain, if any.
func AsSense(err error) (*SenseError, bool) {
	var se *SenseError
	ok := errors.As(err, &se)
	return se, ok
}

func senseIs(err error, f func(*SenseError) bool) bool {
	se, ok := AsSense(err)
	return ok && f(se)
}

// IsNoMedium reports whether err is sense data saying no medium is present.
func IsNoMedium(err error) bool {
	return senseIs(err, func(e *SenseError) bool {
		return e.ASC == ASCMediumNotPresent && (e.Key == NotReady || e.Key == UnitAttention)
	})
}

// IsBecomingReady reports whether err says the unit is becoming ready.
func IsBecomingReady(err error) bool {
	return senseIs(err, func(e *SenseError) bool {
		return e.Key == NotReady && e.ASC == ASCNotReady && e.ASCQ == ASCQBecomingReady
	})
}

// IsMediumChanged reports whether err is a UNIT ATTENTION saying the medium
// may have changed.
func IsMediumChanged(err error) bool {
	return senseIs(err, func(e *SenseError) bool { return e.Key == UnitAttention && e.ASC == ASCMediumChanged })
}

// IsMediumError reports whether err is a MEDIUM ERROR (read or write failure
// of the card itself).
func IsMediumError(err error) bool {
	return senseIs(err, func(e *SenseError) bool { return e.Key == MediumError })
}

// IsIllegalRequest reports whether err is an ILLEGAL REQUEST of any kind:
// the device does not support the command or one of its fields.
func IsIllegalRequest(err error) bool {
	return senseIs(err, func(e *SenseError) bool { return e.Key == IllegalRequest })
}

// IsInvalidOpcode reports whether err says the device does not implement the
// command.
func IsInvalidOpcode(err error) bool {
	return senseIs(err, func(e *SenseError) bool { return e.Key == IllegalRequest && e.ASC == ASCInvalidOpcode })
}

// IsLBAOutOfRange reports whether err says the command addressed blocks past
// the end of the medium.
func IsLBAOutOfRange(err error) bool {
	return senseIs(err, func(e *SenseError) bool { return e.Key == IllegalRequest && e.ASC == ASCLBAOutOfRange })
}

// IsMediumSwap reports whether err is a UNIT ATTENTION saying the medium
// changed or left: after blocks were written, the card in the slot may no
// longer be the one they went to.
func IsMediumSwap(err error) bool {
	return senseIs(err, func(e *SenseError) bool {
		return e.Key == UnitAttention && (e.ASC == ASCMediumChanged || e.ASC == ASCMediumNotPresent)
	})
}
