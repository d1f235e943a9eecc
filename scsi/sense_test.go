package scsi

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// fixedSense builds fixed-format sense data as QEMU sends it: 18 bytes,
// VALID=0 unless info is given.
func fixedSense(key SenseKey, asc, ascq uint8) []byte {
	b := make([]byte, 18)
	b[0], b[2], b[7], b[12], b[13] = 0x70, byte(key), 10, asc, ascq
	return b
}

func TestParseSense(t *testing.T) {
	validInfo := fixedSense(MediumError, 0x11, 0)
	validInfo[0] |= 0x80
	validInfo[3], validInfo[4], validInfo[5], validInfo[6] = 0, 0, 0x12, 0x34

	desc := []byte{0x72, 0x03, 0x0C, 0x00, 0, 0, 0, 12,
		0x00, 0x0A, 0x80, 0, 0, 0, 0, 1, 0, 0, 0, 5}
	descNoValid := append([]byte(nil), desc...)
	descNoValid[10] = 0
	descTruncated := desc[:15] // information descriptor cut short: ignored

	tests := []struct {
		name    string
		in      []byte
		want    SenseError
		wantErr error
	}{
		{"fixed no medium", fixedSense(NotReady, 0x3A, 0), SenseError{Key: NotReady, ASC: 0x3A}, nil},
		{"fixed with information", validInfo, SenseError{Key: MediumError, ASC: 0x11, Valid: true, Information: 0x1234}, nil},
		{"fixed deferred", append([]byte{0x71}, fixedSense(HardwareError, 0x44, 0)[1:]...), SenseError{Key: HardwareError, ASC: 0x44, Deferred: true}, nil},
		{"fixed short: ASC missing", fixedSense(UnitAttention, 0x29, 0)[:8], SenseError{Key: UnitAttention}, nil},
		{"descriptor with information", desc, SenseError{Key: MediumError, ASC: 0x0C, Valid: true, Information: 1<<32 + 5}, nil},
		{"descriptor information not valid", descNoValid, SenseError{Key: MediumError, ASC: 0x0C, Information: 1<<32 + 5}, nil},
		{"descriptor truncated", descTruncated, SenseError{Key: MediumError, ASC: 0x0C}, nil},
		{"descriptor deferred header only", []byte{0x73, 0x06, 0x28, 0x00}, SenseError{Key: UnitAttention, ASC: 0x28, Deferred: true}, nil},
		{"unknown format", []byte{0x7F, 0, 0}, SenseError{}, ErrMalformed},
		{"empty", nil, SenseError{}, ErrShortResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSense(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && *got != tt.want {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// TestSenseTextsStateFacts: no sense text, for any key and the ASCs a
// writer tells apart, says what to do.
func TestSenseTextsStateFacts(t *testing.T) {
	ascs := []uint8{0, ASCWriteError, ASCNotReady, ASCUnrecoveredRead, ASCInvalidOpcode, ASCLBAOutOfRange,
		ASCInvalidFieldInCDB, ASCWriteProtected, ASCMediumChanged, ASCResetOccurred, ASCMediumNotPresent}
	for key := range 16 {
		for _, asc := range ascs {
			for _, ascq := range []uint8{0, ASCQBecomingReady} {
				se := &SenseError{Key: SenseKey(key), ASC: asc, ASCQ: ascq}
				factsonly.Check(t, se.Error())
			}
		}
	}
}

func TestSenseErrorClassification(t *testing.T) {
	tests := []struct {
		key       SenseKey
		asc, ascq uint8
		action    Action
		says      string
		is        func(error) bool
	}{
		{NotReady, 0x3A, 0x00, Fail, "no medium", IsNoMedium},
		{UnitAttention, 0x3A, 0x00, Retry, "no medium", IsMediumSwap},
		{NotReady, 0x04, 0x01, Wait, "becoming ready", IsBecomingReady},
		{NotReady, 0x04, 0x02, Fail, "not ready", nil},
		{UnitAttention, 0x28, 0x00, Retry, "medium may have changed", IsMediumChanged},
		{UnitAttention, 0x28, 0x01, Retry, "medium may have changed", IsMediumSwap},
		{UnitAttention, 0x29, 0x00, Retry, "reset", nil},
		{DataProtect, 0x27, 0x00, Fail, "write-protected", nil},
		{IllegalRequest, 0x21, 0x00, Fail, "out of range", IsLBAOutOfRange},
		{MediumError, 0x0C, 0x00, Retry, "write error", IsMediumError},
		{MediumError, 0x11, 0x00, Fail, "unrecovered read error", IsMediumError},
		{MediumError, 0x13, 0x00, Fail, "medium error", IsMediumError},
		{MediumError, 0x14, 0x01, Fail, "medium error", IsMediumError},
		{RecoveredError, 0x17, 0x01, Accept, "RECOVERED ERROR", nil},
		{NoSense, 0x00, 0x00, Retry, "without sense data", nil},
		{NotReady, 0x04, 0x1A, Wait, "not ready", nil},
		{NotReady, 0x04, 0x03, Fail, "not ready", nil},
		{IllegalRequest, 0x20, 0x00, Fail, "not supported", IsInvalidOpcode},
		{IllegalRequest, 0x24, 0x00, Fail, "invalid field", IsIllegalRequest},
		{AbortedCommand, 0x00, 0x06, Retry, "aborted", nil},
		{HardwareError, 0x44, 0x00, Retry, "hardware error", nil},
		{BlankCheck, 0x00, 0x00, Fail, "BLANK CHECK", nil},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%X/%02X/%02X", uint8(tt.key), tt.asc, tt.ascq)
		t.Run(name, func(t *testing.T) {
			se, err := ParseSense(fixedSense(tt.key, tt.asc, tt.ascq))
			if err != nil {
				t.Fatal(err)
			}
			if got := se.Action(); got != tt.action {
				t.Errorf("Action() = %v, want %v", got, tt.action)
			}
			msg := se.Error()
			if !strings.Contains(msg, tt.says) || !strings.Contains(msg, name) {
				t.Errorf("Error() = %q, want it to contain %q and %q", msg, tt.says, name)
			}
			factsonly.Check(t, msg)
			wrapped := fmt.Errorf("WRITE(10) LUN 0: %w", se)
			if tt.is != nil && !tt.is(wrapped) {
				t.Errorf("predicate false for wrapped %v", wrapped)
			}
		})
	}
}

// TestNeedsStart: the NOT READY states Linux's sd sends START UNIT for.
func TestNeedsStart(t *testing.T) {
	for _, tt := range []struct {
		key       SenseKey
		asc, ascq uint8
		want      bool
	}{
		{NotReady, 0x04, 0x02, true}, {NotReady, 0x04, 0x00, true}, {NotReady, 0x04, 0x01, true},
		{NotReady, 0x3A, 0x00, false}, {NotReady, 0x04, 0x03, false}, {NotReady, 0x04, 0x0B, false},
		{NotReady, 0x04, 0x0C, false}, {NotReady, 0x04, 0x1B, false}, {UnitAttention, 0x04, 0x02, false},
	} {
		if got := NeedsStart(&SenseError{Key: tt.key, ASC: tt.asc, ASCQ: tt.ascq}); got != tt.want {
			t.Errorf("NeedsStart(%X/%02X/%02X) = %v", uint8(tt.key), tt.asc, tt.ascq, got)
		}
	}
}

func TestSensePredicatesRejectOthers(t *testing.T) {
	preds := []func(error) bool{IsNoMedium, IsMediumSwap, IsBecomingReady, IsMediumChanged, IsMediumError, IsIllegalRequest, IsInvalidOpcode, IsLBAOutOfRange}
	for i, p := range preds {
		if p(nil) || p(errors.New("x")) || p(&SenseError{Key: RecoveredError}) {
			t.Errorf("predicate %d matched an unrelated error", i)
		}
	}
}
