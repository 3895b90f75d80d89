// Package live captures frames from a network interface with Linux
// AF_PACKET sockets, in pure Go (no libpcap, no cgo).
//
// The default device "any" captures every interface through a cooked socket
// and delivers LINKTYPE_LINUX_SLL2 frames (the link-layer header rebuilt from
// the socket address: protocol, interface index, hardware type, packet type,
// source address). A named Ethernet or loopback device is captured raw
// (LINKTYPE_ETHERNET) and put in promiscuous mode; other named devices are
// captured cooked. VLAN tags the kernel stripped are put back, as libpcap
// does. Kernel drop counters are read from PACKET_STATISTICS.
//
// Frames are delivered to a packet.FrameSink exactly like file frames; the
// Frame and its Data are reused after the sink returns.
package live

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/portrange"
)

// Snap length profiles.
const (
	SnaplenSignaling = 1500  // enough for SIP over UDP on a standard MTU
	SnaplenFull      = 65535 // whole frames
)

// Link types delivered.
const (
	LinkTypeEthernet = 1
	LinkTypeSLL2     = 276
)

// Kernel receive buffer: 64 MiB, halved on refusal down to 2 MiB.
const (
	DefaultBuffer = 64 << 20
	minBuffer     = 2 << 20
)

const (
	sll2Len     = 20
	vlanLen     = 4
	arphrdEth   = 1
	arphrdLoop  = 772
	ethPAll     = 0x0003
	pktOutgoing = 4
)

// ErrClosed is returned by Next once the handle is closed.
var ErrClosed = errors.New("live capture closed")

// Options configure a live capture. The zero value captures "any" with the
// full snap length.
type Options struct {
	// Device is the interface to capture; "" or "any" means every
	// interface (cooked, SLL2).
	Device string
	// Snaplen is the most bytes kept per frame; 0 means SnaplenFull.
	Snaplen int
	// NoPromiscuous leaves a named device out of promiscuous mode.
	NoPromiscuous bool
	// Cooked captures a named Ethernet device cooked (SLL2) instead of raw.
	Cooked bool
	// BufferSize is the kernel receive buffer; 0 means DefaultBuffer. A
	// refused size is halved down to 2 MiB.
	BufferSize int
	// Filter is a classic BPF program run in the kernel (nil: everything,
	// or the automatic filter when Ports is set).
	Filter []unix.SockFilter
	// Ports, without Filter and UserFilter, build the automatic kernel
	// filter (AutoFilter: the SIP and WebSocket ports, RTP dropped).
	Ports []*portrange.Set
	// UserFilter is the user's classic BPF program (--bpf-file), run as
	// given, never rewritten, on every frame as it is delivered (SLL2 or
	// Ethernet, VLAN tags put back) before the frame leaves Next; frames
	// it rejects are counted (Stats.UserFilterRejected). It replaces the
	// automatic filter: nothing is filtered in the kernel.
	UserFilter []bpf.Instruction
	// Name is the source name frames carry; empty means the device name.
	Name string
	// SourceID is the SourceID frames carry.
	SourceID uint16
}

// Stats are a handle's counters.
type Stats struct {
	// Received counts frames delivered by Next.
	Received uint64 `json:"received"`
	// Bytes counts their captured bytes.
	Bytes uint64 `json:"bytes"`
	// KernelPackets and KernelDrops are the kernel's own counts (frames
	// that reached the socket, and frames dropped because its buffer was
	// full); KernelStats is false when they could not be read.
	KernelPackets uint64 `json:"kernel_packets,omitempty"`
	KernelDrops   uint64 `json:"kernel_drops,omitempty"`
	KernelStats   bool   `json:"-"`
	// SkippedOutgoingLoopback counts loopback frames seen twice (as sent and
	// as received) whose sent copy was skipped.
	SkippedOutgoingLoopback uint64 `json:"skipped_outgoing_loopback,omitempty"`
	// VLANTagsRestored counts frames whose 802.1Q tag the kernel had
	// stripped into metadata and the capture put back.
	VLANTagsRestored uint64 `json:"vlan_tags_restored,omitempty"`
	// BufferSize is the kernel receive buffer obtained.
	BufferSize int `json:"buffer_size"`
	// Filter says which filter runs: "auto" (the kernel keeps the SIP and
	// WebSocket ports only), "kernel" (a program given in Options.Filter),
	// "user" (--bpf-file, in user space) or "none".
	Filter string `json:"filter"`
	// UserFilterRejected counts frames the user's filter rejected.
	UserFilterRejected uint64 `json:"user_filter_rejected,omitempty"`
}

// Handle is an open live capture.
type Handle struct {
	device   string
	name     string
	cooked   bool
	linkType uint16
	ifindex  int
	loop     map[int]bool // loopback interface indexes
	file     *os.File
	rc       syscall.RawConn
	buf      []byte
	oob      []byte
	snaplen  int
	frame    packet.Frame
	bufSize  int

	received  atomic.Uint64
	bytes     atomic.Uint64
	skipped   atomic.Uint64
	vlans     atomic.Uint64
	kmu       sync.Mutex
	kpackets  uint64
	kdrops    uint64
	kstatsErr bool
	closed    atomic.Bool
	filter    string
	userVM    *bpf.VM
	userRej   atomic.Uint64
}

// Open opens a live capture. Not being allowed to is reported as
// `opening live capture on DEV: permission denied (needs root or
// CAP_NET_RAW)`.
func Open(o Options) (*Handle, error) {
	dev := o.Device
	if dev == "" {
		dev = "any"
	}
	h := &Handle{device: dev, name: o.Name, snaplen: o.Snaplen}
	if h.name == "" {
		h.name = dev
	}
	if h.snaplen <= 0 || h.snaplen > SnaplenFull {
		h.snaplen = SnaplenFull
	}
	if h.snaplen < 64 {
		h.snaplen = 64
	}
	fail := func(what string, err error) (*Handle, error) {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("opening live capture on %s: permission denied (needs root or CAP_NET_RAW)", dev)
		}
		if what == "" {
			return nil, fmt.Errorf("opening live capture on %s: %w", dev, err)
		}
		return nil, fmt.Errorf("opening live capture on %s: %s: %w", dev, what, err)
	}
	h.loop = map[int]bool{}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if i.Flags&net.FlagLoopback != 0 {
				h.loop[i.Index] = true
			}
		}
	}
	h.cooked = true
	if dev != "any" {
		ifc, err := net.InterfaceByName(dev)
		if err != nil {
			return nil, fmt.Errorf("opening live capture on %s: no such device", dev)
		}
		h.ifindex = ifc.Index
		if hw := hwType(dev); (hw == arphrdEth || hw == arphrdLoop) && !o.Cooked {
			h.cooked = false
		}
	}
	typ := unix.SOCK_RAW
	h.linkType = LinkTypeEthernet
	if h.cooked {
		typ = unix.SOCK_DGRAM
		h.linkType = LinkTypeSLL2
	}
	// protocol 0 until bound, so nothing queues before the filter is set
	fd, err := unix.Socket(unix.AF_PACKET, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail("", err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	h.filter = "none"
	switch {
	case o.UserFilter != nil:
		vm, err := bpf.NewVM(o.UserFilter)
		if err != nil {
			return fail("loading the user's filter", err)
		}
		h.userVM, h.filter = vm, "user"
	case o.Filter != nil:
		h.filter = "kernel"
	case len(o.Ports) > 0:
		prog, err := AutoFilter(h.cooked, o.Ports...)
		if err != nil {
			return fail("", err)
		}
		o.Filter, h.filter = prog, "auto"
	}
	if o.Filter != nil && h.userVM == nil {
		prog := unix.SockFprog{Len: uint16(len(o.Filter)), Filter: &o.Filter[0]}
		if len(o.Filter) == 0 {
			return fail("attaching filter", errors.New("empty filter program"))
		}
		if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
			return fail("attaching filter", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return fail("enabling auxdata", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fail("enabling timestamps", err)
	}
	want := o.BufferSize
	if want <= 0 {
		want = DefaultBuffer
	}
	for size := want; ; size /= 2 {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size) == nil ||
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, size) == nil {
			break
		}
		if size/2 < minBuffer {
			break
		}
	}
	if got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil {
		h.bufSize = got
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: h.ifindex}); err != nil {
		return fail("binding", err)
	}
	if h.ifindex != 0 && !o.NoPromiscuous {
		mreq := unix.PacketMreq{Ifindex: int32(h.ifindex), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
			return fail("enabling promiscuous mode", err)
		}
	}
	// reset the kernel counters so they count from here
	_, _ = unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	h.file = os.NewFile(uintptr(fd), "packet:"+dev)
	rc, err := h.file.SyscallConn()
	if err != nil {
		h.file.Close()
		ok = true // closed by the file
		return fail("", err)
	}
	h.rc = rc
	h.buf = make([]byte, sll2Len+vlanLen+h.snaplen)
	h.oob = make([]byte, 256)
	h.frame.Source = h.name
	h.frame.SourceID = o.SourceID
	h.frame.LinkType = h.linkType
	ok = true
	return h, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// hwType reads the ARPHRD type of a device (0 when unknown).
func hwType(dev string) int {
	b, err := os.ReadFile("/sys/class/net/" + dev + "/type")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return n
}

// LinkType returns the link type of the frames delivered.
func (h *Handle) LinkType() uint16 { return h.linkType }

// Device returns the captured device ("any" for all).
func (h *Handle) Device() string { return h.device }

// Next blocks until a frame arrives and returns it; the Frame and its Data
// are reused by the next call. It returns ErrClosed once Close was called.
func (h *Handle) Next() (*packet.Frame, error) {
	for {
		f, skip, err := h.read()
		if err != nil {
			return nil, err
		}
		if skip {
			continue
		}
		if h.userVM != nil {
			if n, err := h.userVM.Run(f.Data); err != nil || n == 0 {
				h.userRej.Add(1)
				continue
			}
		}
		h.received.Add(1)
		h.bytes.Add(uint64(len(f.Data)))
		return f, nil
	}
}

func (h *Handle) read() (*packet.Frame, bool, error) {
	// payload offset: room for the SLL2 header and a VLAN tag ahead of it
	// the captured frame (link header included) is at most snaplen bytes
	off, limit := sll2Len+vlanLen, h.snaplen-sll2Len
	if !h.cooked {
		off, limit = vlanLen, h.snaplen
	}
	var n, oobn int
	var from unix.Sockaddr
	var rerr error
	err := h.rc.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, from, rerr = unix.Recvmsg(int(fd), h.buf[off:off+limit], h.oob, unix.MSG_TRUNC)
			if rerr != unix.EINTR {
				break
			}
		}
		return rerr != unix.EAGAIN && rerr != unix.EWOULDBLOCK
	})
	if err != nil || rerr != nil {
		if h.closed.Load() || errors.Is(err, os.ErrClosed) {
			return nil, false, ErrClosed
		}
		if err == nil {
			err = rerr
		}
		if errors.Is(err, unix.ENETDOWN) {
			return nil, false, fmt.Errorf("reading live capture on %s: device is down: %w", h.device, err)
		}
		return nil, false, fmt.Errorf("reading live capture on %s: %w", h.device, err)
	}
	sll, _ := from.(*unix.SockaddrLinklayer)
	if sll != nil && sll.Pkttype == pktOutgoing && h.loop[sll.Ifindex] {
		h.skipped.Add(1)
		return nil, true, nil
	}
	caplen := n
	if caplen > limit {
		caplen = limit
	}
	f := &h.frame
	f.TS = time.Time{}
	var vlanTCI, vlanTPID uint16
	vlan := false
	if err := parseCmsgs(h.oob[:oobn], func(level, typ int32, data []byte) {
		switch {
		case level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})):
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			f.TS = time.Unix(ts.Sec, ts.Nsec).UTC()
		case level == unix.SOL_PACKET && typ == unix.PACKET_AUXDATA && len(data) >= int(unsafe.Sizeof(unix.TpacketAuxdata{})):
			aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&data[0]))
			if aux.Status&unix.TP_STATUS_VLAN_VALID != 0 || aux.Vlan_tci != 0 {
				vlan = true
				vlanTCI = aux.Vlan_tci
				vlanTPID = 0x8100
				if aux.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 && aux.Vlan_tpid != 0 {
					vlanTPID = aux.Vlan_tpid
				}
			}
		}
	}); err != nil {
		return nil, false, fmt.Errorf("reading live capture on %s: %w", h.device, err)
	}
	if f.TS.IsZero() {
		f.TS = time.Now().UTC()
	}
	extra := 0
	if h.cooked {
		start := vlanLen
		proto := uint16(0)
		if sll != nil {
			proto = htons(sll.Protocol)
		}
		if vlan {
			// SLL2 header, then the tag (TCI, original protocol)
			start = 0
			binary.BigEndian.PutUint16(h.buf[sll2Len:], vlanTCI)
			binary.BigEndian.PutUint16(h.buf[sll2Len+2:], proto)
			proto = vlanTPID
			extra = vlanLen
			h.vlans.Add(1)
		}
		hdr := h.buf[start : start+sll2Len]
		binary.BigEndian.PutUint16(hdr[0:], proto)
		binary.BigEndian.PutUint16(hdr[2:], 0)
		if sll != nil {
			binary.BigEndian.PutUint32(hdr[4:], uint32(sll.Ifindex))
			binary.BigEndian.PutUint16(hdr[8:], sll.Hatype)
			hdr[10] = sll.Pkttype
			hdr[11] = sll.Halen
			copy(hdr[12:20], sll.Addr[:])
		} else {
			clear(hdr[4:])
		}
		f.Data = h.buf[start : off+caplen]
		f.OrigLen = sll2Len + extra + n
	} else {
		start := vlanLen
		if vlan && caplen >= 12 {
			// move the MAC addresses up and put the tag after them
			copy(h.buf[0:12], h.buf[vlanLen:vlanLen+12])
			binary.BigEndian.PutUint16(h.buf[12:], vlanTPID)
			binary.BigEndian.PutUint16(h.buf[14:], vlanTCI)
			start = 0
			extra = vlanLen
			h.vlans.Add(1)
		}
		f.Data = h.buf[start : off+caplen]
		f.OrigLen = extra + n
	}
	f.Ordinal++
	return f, false, nil
}

// parseCmsgs walks control messages without allocating.
func parseCmsgs(b []byte, fn func(level, typ int32, data []byte)) error {
	hl := unix.CmsgSpace(0)
	for len(b) >= hl {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < hl || l > len(b) {
			return errors.New("bad control message")
		}
		fn(h.Level, h.Type, b[hl:l])
		adv := unix.CmsgSpace(l - hl)
		if adv > len(b) {
			break
		}
		b = b[adv:]
	}
	return nil
}

// Stats returns the counters, reading the kernel's.
func (h *Handle) Stats() Stats {
	s := Stats{Received: h.received.Load(), Bytes: h.bytes.Load(), SkippedOutgoingLoopback: h.skipped.Load(), VLANTagsRestored: h.vlans.Load(), BufferSize: h.bufSize,
		Filter: h.filter, UserFilterRejected: h.userRej.Load()}
	h.kmu.Lock()
	defer h.kmu.Unlock()
	if !h.closed.Load() {
		h.readKernelStats()
	}
	if !h.kstatsErr {
		s.KernelPackets, s.KernelDrops, s.KernelStats = h.kpackets, h.kdrops, true
	}
	return s
}

// readKernelStats adds the kernel's counters (reset by every read) to the
// running totals. The caller holds kmu.
func (h *Handle) readKernelStats() {
	var st *unix.TpacketStats
	var gerr error
	if err := h.rc.Control(func(fd uintptr) {
		st, gerr = unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS)
	}); err == nil && gerr == nil {
		h.kpackets += uint64(st.Packets)
		h.kdrops += uint64(st.Drops)
	} else {
		h.kstatsErr = true
	}
}

// Close closes the socket; a blocked Next returns ErrClosed. The counters
// stay readable with their final values.
func (h *Handle) Close() error {
	h.kmu.Lock()
	defer h.kmu.Unlock()
	if h.closed.Swap(true) {
		return nil
	}
	h.readKernelStats()
	return h.file.Close()
}

// Capture is a live capture running on its own goroutine.
type Capture struct {
	h    *Handle
	done chan struct{}
	err  error
}

// Start opens a live capture and delivers its frames to sink on a new
// goroutine until ctx is done, Stop is called, or the socket fails. Open
// errors (permission, no such device) are returned at once.
func Start(ctx context.Context, o Options, sink packet.FrameSink) (*Capture, error) {
	h, err := Open(o)
	if err != nil {
		return nil, err
	}
	c := &Capture{h: h, done: make(chan struct{})}
	stop := context.AfterFunc(ctx, func() { h.Close() })
	go func() {
		defer close(c.done)
		defer stop()
		for {
			f, err := h.Next()
			if err != nil {
				if !errors.Is(err, ErrClosed) {
					c.err = err
				}
				h.Close()
				return
			}
			sink.HandleFrame(f)
		}
	}()
	return c, nil
}

// Handle returns the capture's handle (for Stats, LinkType).
func (c *Capture) Handle() *Handle { return c.h }

// Stats returns the handle's counters.
func (c *Capture) Stats() Stats { return c.h.Stats() }

// Stop closes the socket and waits for the capture goroutine. It returns
// the error that ended the capture, nil when it was stopped on request.
func (c *Capture) Stop() error {
	c.h.Close()
	<-c.done
	return c.err
}

// Err returns the error that ended the capture: nil while it runs and when
// it was stopped on request.
func (c *Capture) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Done is closed when the capture goroutine ends.
func (c *Capture) Done() <-chan struct{} { return c.done }

// Wait blocks until the capture ends and returns its error (nil when
// stopped on request).
func (c *Capture) Wait() error {
	<-c.done
	return c.err
}
