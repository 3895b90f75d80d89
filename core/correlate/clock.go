package correlate

// Clock is this node's clock discipline as the kernel reports it, read
// beside a timing_heuristic match: two legs started "within 2 s" only
// means something when the clocks that stamped them were within 2 s too.
// Absent values were not read.
type Clock struct {
	// Available: the kernel answered (adjtimex); false elsewhere.
	Available bool `json:"available" desc:"the kernel clock state could be read (adjtimex)"`
	// Synchronized: the kernel considers the clock synchronized (no
	// STA_UNSYNC, no TIME_ERROR).
	Synchronized bool `json:"synchronized" desc:"the kernel considers the clock synchronized"`
	// MaxErrorUs is the kernel's maximum error estimate, microseconds.
	MaxErrorUs *int64 `json:"max_error_us,omitempty" desc:"maximum clock error the kernel reports, microseconds"`
	// EstErrorUs is the kernel's estimated error, microseconds.
	EstErrorUs *int64 `json:"est_error_us,omitempty" desc:"estimated clock error the kernel reports, microseconds"`
}

// ReadClock reads the clock state now. Call it only when a timing match is
// shown: beside an identifier match a clock reading invites weighing two
// things that do not trade off.
func ReadClock() Clock { return readClock() }
