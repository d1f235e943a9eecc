package main

import (
	"github.com/spf13/pflag"

	"github.com/usbflash/usbflash/internal/session"
)

// blockMapFlags are write's options for writing less than the whole image.
type blockMapFlags struct {
	path           string
	noBmap, sparse bool
}

func (f *blockMapFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.path, "bmap", "", "write only the ranges this bmaptool block map lists (default: IMAGE.bmap next to the image, compression suffixes removed, when there is one)")
	fl.BoolVar(&f.noBmap, "no-bmap", false, "write every byte even when a block map lies next to the image")
	fl.BoolVar(&f.sparse, "sparse", false, "without a block map, skip what is zero in the image, 4 KiB at a time (those regions keep the card's old bytes)")
}

func (f blockMapFlags) choice() session.BlockMapChoice {
	return session.BlockMapChoice{Path: f.path, Off: f.noBmap, Sparse: f.sparse}
}
