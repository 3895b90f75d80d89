package vcon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/bundles/internal/tooltest"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// siprecTools provisions the bundle over the SIPp-made recording session
// (testdata/made/siprec-metadata.sh).
func siprecTools(t *testing.T) map[string]sdk.Tool {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{filepath.Join(testcap.Root(), "testdata", "made", "siprec-metadata.pcap")}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	return tooltest.Provision(t, Bundle{}, sdk.EnvOptions{Services: []any{c}})
}

// TestSIPRECMetadataOfARecordingSession: values as tshark decodes the
// INVITE (testdata/made/siprec-metadata.pcap.tshark.txt); participants'
// AoRs and names fenced.
func TestSIPRECMetadataOfARecordingSession(t *testing.T) {
	tools := siprecTools(t)
	var out SIPRECMetadata
	r := call(t, tools["siprec_metadata"], `{"call_id":"1-30771@127.0.0.1"}`, &out)
	if !r.Fenced {
		t.Error("no provenance note after fenced names")
	}
	if !out.Recorded || out.SIPREC == nil || out.MetadataMessages != 1 || !out.RequiresSIPREC || !out.Complete ||
		!strings.HasPrefix(out.Frame, "siprec-metadata.pcap#1@") {
		t.Fatalf("%+v", out)
	}
	s := out.SIPREC
	if s.SessionID != "hVpd7YQgRW2nD22h7q60JQ==" || s.Mode != "complete" || len(s.Participants) != 2 || len(s.Streams) != 2 {
		t.Fatalf("%+v", s)
	}
	bob, alice := s.Participants[0], s.Participants[1]
	if bob.ParticipantID != "srfBElmCRp2QB23b7Mpk0w==" || bob.AoR != sdk.Fence("sip:bob@biloxi.example.com") || bob.Name != sdk.Fence("Bob Biloxi") {
		t.Errorf("bob %+v", bob)
	}
	if alice.ParticipantID != "zSfPoSvdSDCmU3A3TRDxAw==" || alice.AoR != sdk.Fence("sip:alice@atlanta.example.com") || alice.Name != "" {
		t.Errorf("alice %+v (no name in the metadata: name absent)", alice)
	}
	st := s.Streams[0]
	if st.StreamID != "UAAMm5GRQKSCMVvLyl4rFw==" || st.Label != "96" || st.ParticipantID != alice.ParticipantID ||
		st.SDPMedia == nil || *st.SDPMedia != (SIPRECSDPMedia{Index: 0, Media: "audio", Port: 12240}) {
		t.Errorf("stream 96 %+v", st)
	}
	st = s.Streams[1]
	if st.StreamID != "i1Pz3to5hGk8fuXl+PbwCw==" || st.Label != "97" || st.ParticipantID != bob.ParticipantID ||
		st.SDPMedia == nil || st.SDPMedia.Port != 12242 {
		t.Errorf("stream 97 %+v", st)
	}
}

// TestSIPRECNotARecordingSession: the sample call carries no metadata.
func TestSIPRECNotARecordingSession(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	var out SIPRECMetadata
	call(t, tools["siprec_metadata"], `{"call_id":"1-1966@10.0.2.20"}`, &out)
	if out.Recorded || out.SIPREC != nil || out.CallID != "1-1966@10.0.2.20" || out.MetadataMessages != 0 ||
		!strings.Contains(out.Reason, "none of the 6 retained messages") || out.CaptureIdentity.Instance == "" {
		t.Errorf("%+v", out)
	}
}

func TestSIPRECRefusals(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	for _, tc := range []struct {
		name, args string
		kind       sdk.Kind
	}{
		{"empty call_id", `{"call_id":""}`, sdk.KindMissingArgument},
		{"unknown call_id", `{"call_id":"nope@nowhere"}`, sdk.KindUnknownID},
		{"no call_id", `{}`, sdk.KindMissingArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if e := callErr(t, tools["siprec_metadata"], tc.args); e.Code != sdk.CodeInvalidParams || e.Kind != tc.kind {
				t.Errorf("code %d kind %q: %s", e.Code, e.Kind, e.Message)
			}
		})
	}
}
