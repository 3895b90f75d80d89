package dialog

import (
	"math"
	"time"
)

// stamp is a time as a leg or a transaction keeps it: UTC seconds counted
// from the zero time.Time (January 1 of year 1) and nanoseconds, 16 bytes
// and no pointer where a time.Time takes 24 and a location pointer the
// collector scans. It holds every UTC time.Time exactly (time.Time counts
// its seconds in an int64 from the same origin), and the zero stamp is the
// zero time.Time: "not seen" stays the zero value, never a real instant
// (a capture timestamp of 1970-01-01T00:00:00Z is one).
type stamp struct {
	sec  int64
	nsec int32
}

// zeroUnix is the zero time.Time in Unix seconds.
var zeroUnix = time.Time{}.Unix()

// stampOf returns t as a stamp (the monotonic reading and location are
// dropped: the store keeps UTC capture times).
func stampOf(t time.Time) stamp {
	return stamp{sec: t.Unix() - zeroUnix, nsec: int32(t.Nanosecond())}
}

// time returns the stamp as a UTC time.Time (the zero Time for the zero
// stamp).
func (s stamp) time() time.Time {
	if s == (stamp{}) {
		return time.Time{}
	}
	return time.Unix(s.sec+zeroUnix, int64(s.nsec)).UTC()
}

func (s stamp) isZero() bool { return s == (stamp{}) }

// before reports whether s is earlier than u.
func (s stamp) before(u stamp) bool {
	return s.sec < u.sec || s.sec == u.sec && s.nsec < u.nsec
}

// inc32 counts one more in a count the store keeps as int32 (a leg's, a
// transaction's, a dialog's bounds), saturating at 2^31-1 rather than
// wrapping: a single Call-ID flooded for hours stays counted at the top.
func inc32(p *int32) {
	if *p != math.MaxInt32 {
		*p++
	}
}
