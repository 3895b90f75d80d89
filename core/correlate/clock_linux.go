//go:build linux

package correlate

import "golang.org/x/sys/unix"

// Kernel clock states and status bits (adjtimex(2)).
const (
	timeError = 5      // TIME_ERROR: the clock is not synchronized
	staUnsync = 0x0040 // STA_UNSYNC
)

func readClock() Clock {
	var tx unix.Timex // Modes 0: read only, no privilege needed
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return Clock{}
	}
	return clockFrom(state, tx.Status, int64(tx.Maxerror), int64(tx.Esterror))
}

// clockFrom interprets one adjtimex answer.
func clockFrom(state int, status int32, maxErr, estErr int64) Clock {
	return Clock{
		Available:    true,
		Synchronized: state != timeError && status&staUnsync == 0,
		MaxErrorUs:   &maxErr,
		EstErrorUs:   &estErr,
	}
}
