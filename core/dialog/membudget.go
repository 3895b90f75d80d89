package dialog

import "unsafe"

// The store's byte budget (Config.MaxBytes) counts what the store holds
// for each dialog: the retained messages' own bytes (sip.Retained shares
// them with the strings the dialog keeps), plus an estimate of the store's
// structures around them. The estimates are sized from the structures
// themselves (unsafe.Sizeof) and a measured allowance for what grows per
// message (a transaction entry, a retransmission identity, the duplicate
// table's entry): BenchmarkStoreBytesPerDialog checks the estimate against
// the heap.
var (
	// dialogOverhead is a dialog's structures before its messages: the
	// dialog (its first leg, transactions, addresses and identities
	// inside), the LRU (lru.go) and index entries.
	dialogOverhead = int64(unsafe.Sizeof(dialog{})) + lruEntryBytes + 240
	// messageOverhead is one retained message's entry beside its bytes,
	// and its share of the duplicate table and of the transactions and
	// identities past the first ones (which the dialog holds).
	messageOverhead = int64(unsafe.Sizeof(retained{})) + 96
)

// wholeFactor: a message the parser did not make is kept parsed, three to
// four times its size (retained.go).
const wholeFactor = 4

// Bounds of the default byte budget.
const (
	minDefaultBytes      = 64 << 20
	maxDefaultBytes      = 1 << 30
	fallbackDefaultBytes = 512 << 20
)

// DefaultMaxBytes is the store's default byte budget, sized for the
// machine: a sixteenth of its physical memory, between 64 MiB and 1 GiB
// (512 MiB where the memory cannot be read). 30,000 dialogs carrying 60 KB
// bodies (about 1.9 GB) do not fit on any machine: the oldest are evicted
// and counted.
func DefaultMaxBytes() int64 {
	return defaultBytesFor(totalMemory())
}

func defaultBytesFor(total uint64) int64 {
	if total == 0 {
		return fallbackDefaultBytes
	}
	b := total / 16
	switch {
	case b < minDefaultBytes:
		return minDefaultBytes
	case b > maxDefaultBytes:
		return maxDefaultBytes
	}
	return int64(b)
}
