package sip_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/testcap"
)

type truthSDP struct {
	Misc struct {
		SDPFrames int `json:"sdp_frames"`
	} `json:"misc"`
	RTP struct {
		Default struct {
			Streams []struct {
				SrcAddr      string         `json:"src_addr"`
				SrcPort      int            `json:"src_port"`
				DstAddr      string         `json:"dst_addr"`
				DstPort      int            `json:"dst_port"`
				PayloadTypes map[string]int `json:"payload_types"`
			} `json:"streams"`
		} `json:"default"`
	} `json:"rtp"`
}

// mgcpSDP lists, per capture, SDP bodies tshark counts that travel in MGCP
// rather than SIP, and the RTP endpoints only those announce (hand-checked
// with tshark -V: SIP_CALL_RTP_G711 frames 2945 and 2946 are MGCP CRCX
// with SDP for 200.57.7.196:40362 and 200.57.7.202:30000).
var mgcpSDP = map[string]struct {
	bodies    int
	endpoints []string
}{
	"SIP_CALL_RTP_G711": {2, []string{"200.57.7.196:40362", "200.57.7.202:30000"}},
}

// TestCaptureSDP parses the SDP of every SIP message of every public
// capture: the number of messages carrying SDP equals tshark's SDP frame
// count, every body parses without errors, and every RTP stream tshark ties
// to SDP has an endpoint (address:port) announced by some SDP media section
// whose formats include the stream's payload types.
func TestCaptureSDP(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil || len(names) == 0 {
		t.Skipf("public captures not available: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			msgs, err := sip.CaptureMessages(t, testcap.Public(name))
			if errors.Is(err, sip.ErrNotPcap) {
				t.Skipf("%s: another format", name)
			}
			if err != nil {
				t.Fatal(err)
			}
			tr := testcap.LoadTruth[truthSDP](t, name)
			type endpoint struct {
				addr string
				port int
			}
			announced := map[endpoint]map[string]bool{} // endpoint -> payload types
			withSDP := 0
			for _, m := range msgs {
				ct, _ := m.Header(sip.HdrContentType)
				s, ok := sdp.FromBody(ct, m.Body)
				if !ok {
					continue
				}
				withSDP++
				if len(s.Errors) != 0 {
					t.Errorf("%s: SDP errors %q", m, s.Errors)
				}
				for _, md := range s.Media {
					ep := endpoint{md.Conn, md.Port}
					if announced[ep] == nil {
						announced[ep] = map[string]bool{}
					}
					for _, f := range md.Formats {
						announced[ep][fmt.Sprint(f.PayloadType)] = true
					}
				}
			}
			other := mgcpSDP[name]
			if want := tr.Misc.SDPFrames - other.bodies; withSDP != want {
				t.Errorf("messages with SDP: got %d, want %d", withSDP, want)
			}
			mgcpOnly := map[string]bool{}
			for _, ep := range other.endpoints {
				mgcpOnly[ep] = true
			}
			for _, st := range tr.RTP.Default.Streams {
				if mgcpOnly[fmt.Sprintf("%s:%d", st.DstAddr, st.DstPort)] || mgcpOnly[fmt.Sprintf("%s:%d", st.SrcAddr, st.SrcPort)] {
					continue
				}
				pts := announced[endpoint{st.DstAddr, st.DstPort}]
				if pts == nil {
					pts = announced[endpoint{st.SrcAddr, st.SrcPort}]
				}
				if pts == nil {
					t.Errorf("stream %s:%d -> %s:%d: neither end announced in SDP", st.SrcAddr, st.SrcPort, st.DstAddr, st.DstPort)
					continue
				}
				for pt := range st.PayloadTypes {
					if !pts[pt] {
						t.Errorf("stream -> %s:%d: payload type %s not offered", st.DstAddr, st.DstPort, pt)
					}
				}
			}
		})
	}
}
