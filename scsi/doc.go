// Package scsi builds SCSI command descriptor blocks (CDBs) and decodes the
// responses a USB mass-storage device returns to them: INQUIRY data, vital
// product data pages, capacities, mode parameter headers and sense data.
//
// The package does no I/O. Builders return a CDB by value so that the hot
// path of a writer can build one READ or WRITE per buffer without allocating;
// decoders take the bytes a device sent, which may be shorter than asked for,
// and never panic on any input.
//
// Sense data decodes to a *SenseError, which is the error value the transport
// layer returns when a command fails; its Action method says whether to retry,
// wait or give up, and the predicates (IsNoMedium, IsMediumError,
// IsLBAOutOfRange, ...) find what it says through any wrapping, as AsSense
// finds it. A response that cannot be decoded is an error matching
// ErrShortResponse or ErrMalformed.
package scsi
