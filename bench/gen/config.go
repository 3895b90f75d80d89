// Package gen writes a synthetic carrier capture (pcap, Ethernet/IPv4/UDP)
// and, beside it, the exact answers an analyzer must give about it.
//
// The capture holds N concurrent SIP calls over UDP (INVITE with an SDP
// offer, 100, 180, 200 with the answer, ACK, bidirectional 20 ms G.711 RTP,
// BYE, 200) mixed with failing calls (486, 503), cancelled calls (487),
// calls still up when the capture ends, and REGISTERs (some challenged 401
// then accepted). Some streams carry known loss (dropped sequence numbers),
// known jitter (deterministic arrival-time perturbation) or a late stall;
// some calls have one-way audio, a post-dial delay over 11 s or late media.
//
// Everything follows from Config: the same Config gives the same bytes.
// The answers are measured from the frames as written (arrival times in
// whole microseconds, as the pcap stores them), the way a receiver would
// measure them, so tests can compare an analyzer against them exactly.
//
// Tests in other packages regenerate a capture into t.TempDir():
//
//	ans, err := gen.WriteFiles(gen.Small(1), filepath.Join(dir, "c.pcap"), "")
package gen

import (
	"fmt"
	"time"
)

// DefaultStart is the capture's first instant unless Config.Start is set.
var DefaultStart = time.Date(2025, time.March, 3, 9, 0, 0, 0, time.UTC)

// Config decides everything the generator writes.
type Config struct {
	// Seed drives every random choice; the same seed gives the same bytes.
	Seed uint64 `json:"seed"`
	// Calls is the number of INVITE dialogs.
	Calls int `json:"calls"`
	// Duration is the conversation time of an answered call: from the 200 OK
	// to the end of its media (the BYE follows 20-60 ms after the last RTP
	// packet). Setup (150 ms to 14 s) comes on top.
	Duration time.Duration `json:"duration_ns"`
	// Spacing is the time between the starts of consecutive calls.
	Spacing time.Duration `json:"spacing_ns"`
	// Registers is the number of REGISTER dialogs; two of every three are
	// challenged with 401 before they are accepted.
	Registers int `json:"registers"`
	// Start is the capture's first instant; zero means DefaultStart.
	Start time.Time `json:"start"`
	// NoMedia leaves out every RTP packet: the SIP (SDP offers and answers
	// included) is written as for a call with media, a BYE follows the
	// conversation time, and the answers hold no streams. A proxy's or an
	// SBC's signaling interface looks like this.
	NoMedia bool `json:"no_media,omitempty"`
}

// Presets names the configurations the CLI and the benchmarks use.
var Presets = []string{"small", "carrier", "memory", "signaling"}

// Small is the test configuration: every kind of call once (20 calls of
// 4 s, 4 REGISTERs), about 6,700 frames.
func Small(seed uint64) Config {
	return Config{Seed: seed, Calls: 20, Duration: 4 * time.Second, Spacing: 250 * time.Millisecond, Registers: 4}
}

// Carrier is the throughput benchmark: 200 calls of 25 s, about 400,000
// frames.
func Carrier(seed uint64) Config {
	return Config{Seed: seed, Calls: 200, Duration: 25 * time.Second, Spacing: 100 * time.Millisecond, Registers: 20}
}

// Memory is the memory benchmark: 5,000 calls of 3 s (about 1.25 million
// frames), to measure peak resident memory per call.
func Memory(seed uint64) Config {
	return Config{Seed: seed, Calls: 5000, Duration: 3 * time.Second, Spacing: 4 * time.Millisecond, Registers: 500}
}

// Signaling is the SIP throughput benchmark: 20,000 calls of 10 s and
// 1,000 REGISTERs with no media, about 129,000 SIP messages.
func Signaling(seed uint64) Config {
	return Config{Seed: seed, Calls: 20000, Duration: 10 * time.Second, Spacing: 5 * time.Millisecond, Registers: 1000, NoMedia: true}
}

// Preset returns the named configuration (see Presets).
func Preset(name string, seed uint64) (Config, error) {
	switch name {
	case "small":
		return Small(seed), nil
	case "carrier":
		return Carrier(seed), nil
	case "memory":
		return Memory(seed), nil
	case "signaling":
		return Signaling(seed), nil
	}
	return Config{}, fmt.Errorf("unknown preset %q (want one of %v)", name, Presets)
}

// Limits on a Config; they keep ports, addresses and file sizes sane.
const (
	MaxCalls     = 100000
	MaxRegisters = 100000
	MinDuration  = time.Second
	MaxDuration  = time.Hour
)

func (c Config) start() time.Time {
	if c.Start.IsZero() {
		return DefaultStart
	}
	return c.Start
}

// Validate reports the first thing wrong with the configuration.
func (c Config) Validate() error {
	switch {
	case c.Calls < 0 || c.Calls > MaxCalls:
		return fmt.Errorf("calls %d out of range [0, %d]", c.Calls, MaxCalls)
	case c.Registers < 0 || c.Registers > MaxRegisters:
		return fmt.Errorf("registers %d out of range [0, %d]", c.Registers, MaxRegisters)
	case c.Calls > 0 && (c.Duration < MinDuration || c.Duration > MaxDuration):
		return fmt.Errorf("duration %s out of range [%s, %s]", c.Duration, MinDuration, MaxDuration)
	case c.Spacing < 0 || c.Spacing > time.Hour:
		return fmt.Errorf("spacing %s out of range [0, 1h]", c.Spacing)
	case c.Calls+c.Registers == 0:
		return fmt.Errorf("nothing to generate: zero calls and zero registers")
	}
	return nil
}
