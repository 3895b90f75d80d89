package host

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/hepsend"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/pcapout"
)

// egress re-emits what the router reads (engine.Tap): -O writes the frames
// to a pcap or pcapng file (core/pcapout), -H forwards SIP and RTCP to a
// HEP receiver (core/hepsend). docs/egress.md describes both.
type egress struct {
	log  hclog.Logger
	pcap *pcapout.Writer
	hep  *hepsend.Sender
	// pcapErr is the -O write error that stopped the output. It is
	// written under the router's lock and read by finish after the tap
	// was removed (engine.SetTap takes the same lock).
	pcapErr error
}

func (e *egress) Frame(f *packet.Frame) {
	if e.pcap == nil {
		return
	}
	if e.pcapErr != nil {
		return
	}
	if err := e.pcap.WriteFrame(f); err != nil {
		e.pcapErr = err
		e.log.Error("writing -O stopped; the run will exit 1", "error", err)
	}
}

// Names writes the host names a pcapng input gives (its Name Resolution
// Blocks) into the -O file.
func (e *egress) Names(source string, names []capture.Name) {
	if e.pcap == nil || e.pcapErr != nil {
		return
	}
	out := make([]pcapout.Name, len(names))
	for i, n := range names {
		out[i] = pcapout.Name{Addr: n.Addr, Name: n.Name}
	}
	e.pcap.AddNames(out)
}

func (e *egress) SIP(p *packet.Packet, raw []byte) {
	if e.hep != nil {
		e.hep.Forward(p, raw, hep.ProtoSIP)
	}
}

func (e *egress) RTCP(p *packet.Packet) {
	if e.hep != nil {
		e.hep.Forward(p, p.Payload, hep.ProtoRTCP)
	}
}

// parseSize reads a byte count with an optional k, M or G suffix (powers
// of 1024): "100M", "65536".
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	mul := int64(1)
	switch s[len(s)-1] {
	case 'k', 'K':
		mul = 1 << 10
	case 'm', 'M':
		mul = 1 << 20
	case 'g', 'G':
		mul = 1 << 30
	}
	if mul > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<50)/mul {
		return 0, fmt.Errorf("want a byte count such as 1048576, 512k, 100M or 2G")
	}
	return n * mul, nil
}

// checkEgress validates the -O and -H settings: a usage error, exit 2.
func checkEgress(cfg *Config) error {
	o := cfg.Output
	if o.File == "" && (o.SplitSize != "" || o.SplitSeconds != 0 || o.Ring != 0) {
		return usagef("--output-split-size, --output-split-seconds and --output-ring need -O FILE")
	}
	if _, err := parseSize(o.SplitSize); err != nil {
		return usagef("--output-split-size %q: %v", o.SplitSize, err)
	}
	if o.SplitSeconds < 0 || o.Ring < 0 {
		return usagef("--output-split-seconds and --output-ring want 0 or more")
	}
	if o.File != "" {
		src := batchSourcesOf(cfg)
		if len(src.files) == 0 && len(src.interfaces) == 0 {
			return usagef("-O writes the frames of -I files and -i interfaces; HEP listener datagrams (-L) are not link-layer frames")
		}
	}
	h := cfg.HEP
	if h.Send == "" && (h.CaptureID != 0 || h.AuthKey != "" || cfg.FlagSet("hep-send-transport")) {
		return usagef("--hep-capture-id, --hep-auth-key and --hep-send-transport need -H HOST:PORT")
	}
	if h.CaptureID < 0 || int64(h.CaptureID) > 0xFFFFFFFF {
		return usagef("--hep-capture-id %d: want 0 to 4294967295", h.CaptureID)
	}
	switch strings.ToLower(h.SendTransport) {
	case "udp", "tcp":
	default:
		return usagef("--hep-send-transport %q: want udp or tcp", h.SendTransport)
	}
	return nil
}

// osName is what the pcapng section header says of the operating system:
// the kernel's name and release where the system tells them.
func osName() string {
	name := runtime.GOOS
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		name = "Linux " + strings.TrimSpace(string(b))
	}
	return name + " " + runtime.GOARCH
}

// startEgress opens the -O file and starts the -H sender, or returns nil
// when neither is set.
func startEgress(cfg *Config, log hclog.Logger) (*egress, error) {
	o, h := cfg.Output, cfg.HEP
	if o.File == "" && h.Send == "" {
		return nil, nil
	}
	e := &egress{log: log.Named("egress")}
	src := batchSourcesOf(cfg)
	if o.File != "" {
		inputs := append([]string(nil), src.files...)
		if expanded, _, err := capture.Expand(src.files, capture.ExpandOptions{}); err == nil {
			for _, in := range expanded {
				inputs = append(inputs, in.Path)
			}
		}
		split, _ := parseSize(o.SplitSize) // checked by checkEgress
		w, err := pcapout.Create(pcapout.Options{Path: o.File, SplitBytes: split,
			SplitDuration: time.Duration(o.SplitSeconds) * time.Second, Ring: o.Ring, Inputs: inputs,
			Application: "sipnab " + Version, OS: osName()})
		if err != nil {
			return nil, usageError{err}
		}
		e.pcap = w
		e.log.Info("writing frames read", "file", w.Stats().Current, "format", w.Format().String())
		if len(src.listeners) > 0 {
			e.log.Info("-O writes the frames of files and interfaces; HEP listener datagrams are not written")
		}
	}
	if h.Send != "" {
		s, err := hepsend.Start(hepsend.Config{Addr: h.Send, Network: h.SendTransport, CaptureID: uint32(h.CaptureID),
			AuthKey: h.AuthKey, Block: !src.streaming(), Logger: toSlog(e.log.Named("hep"))})
		if err != nil {
			if e.pcap != nil {
				_ = e.pcap.Close()
			}
			return nil, usageError{err}
		}
		e.hep = s
		e.log.Info("forwarding SIP and RTCP as a HEP agent", "receiver", h.Send, "transport", s.Stats().Network, "capture_id", h.CaptureID)
		if len(src.files) > 0 {
			e.log.Warn("forwarding the SIP and RTCP of capture files to the HEP receiver, with their original capture times", "receiver", h.Send, "files", strings.Join(src.files, ", "))
		}
	}
	return e, nil
}

// finish closes the file and the sender (the tap must already be removed)
// and writes one summary line each to w. It returns an error when the -O
// output failed (the run exits 1).
func (e *egress) finish(w io.Writer, c *engine.Capture) error {
	if e == nil {
		return nil
	}
	var errs []error
	var account engine.EgressStatus
	defer func() { c.SetEgress(&account) }()
	if e.pcap != nil {
		err := e.pcap.Close()
		if e.pcapErr != nil {
			err = e.pcapErr
		}
		st := e.pcap.Stats()
		line := fmt.Sprintf("sipnab: -O: %d frames, %d bytes in %d file(s) (%s)", st.Frames, st.Bytes, st.Files, strings.Join(e.pcap.Files(), ", "))
		if st.Deleted > 0 {
			line += fmt.Sprintf("; the ring deleted %d of its own files", st.Deleted)
		}
		if len(st.RingKept) > 0 {
			line += fmt.Sprintf("; the ring kept %d file(s) replaced under its names: %s", len(st.RingKept), strings.Join(st.RingKept, ", "))
		}
		if st.SkippedLinkType > 0 {
			line += fmt.Sprintf("; %d frames of another link type not written (a classic pcap holds one; write .pcapng to keep them)", st.SkippedLinkType)
		}
		fmt.Fprintln(w, line)
		account.Output = &engine.OutputStatus{Frames: st.Frames, Bytes: st.Bytes, Files: e.pcap.Files(), Deleted: st.Deleted,
			RingKept: st.RingKept, SkippedLinkType: st.SkippedLinkType}
		if err != nil {
			account.Output.Error = err.Error()
			errs = append(errs, err)
		}
	}
	if e.hep != nil {
		_ = e.hep.Close()
		st := e.hep.Stats()
		account.HEPSend = &st
		line := fmt.Sprintf("sipnab: -H %s (%s): sent %d (SIP %d, RTCP %d), dropped %d (queue full %d, too large %d, send errors %d, unsent at stop %d)",
			st.Receiver, st.Network, st.Sent, st.SentSIP, st.SentRTCP, st.Dropped(), st.DroppedQueueFull, st.DroppedTooLarge, st.DroppedSendError, st.DroppedAtStop)
		if st.LastError != "" {
			line += "; last error: " + st.LastError
		}
		fmt.Fprintln(w, line)
	}
	return errors.Join(errs...)
}

// isUsage reports a usage error (exit 2).
func isUsage(err error) bool {
	var ue usageError
	return errors.As(err, &ue)
}
